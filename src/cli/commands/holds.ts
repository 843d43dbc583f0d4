/** `holds list|show`: a workspace's holds, from the database or through the API. */
import { stringify } from 'yaml';
import { holdRecord } from '../../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { listHoldRecords } from '../../services/inbox.ts';
import { getHold } from '../../services/read-hold.ts';
import { callService } from '../remote.ts';
import { type Answer, required, UsageError, type Values } from '../usage.ts';
import type { LocalCommand, RemoteCommand } from './command.ts';
import { workspaceNamed } from './workspace.ts';

type HoldList = Awaited<ReturnType<typeof listHoldRecords>>;

const HOLD_STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];

function holdListOptions(values: Values) {
  const { status, tool, agent, before } = values;
  if (status !== undefined && !HOLD_STATUSES.includes(status))
    throw new UsageError(`--status must be one of ${HOLD_STATUSES.join(', ')}`);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError('--limit must be 1-100');
  if (before !== undefined && !HOLD_REFERENCE_PATTERN.test(before))
    throw new UsageError('--before takes a hold reference (svc_pa_…)');
  return { status, tool, agent, before, limit };
}

function holdReference(words: string[]): string {
  const id = words[2];
  if (!id || words.length > 3) throw new UsageError('holds show needs one hold reference');
  if (!HOLD_REFERENCE_PATTERN.test(id)) throw new UsageError('a hold reference looks like svc_pa_…');
  return id;
}

function listed(list: HoldList): Answer {
  const lines = list.holds.map(
    (h) =>
      `${h.id}  ${h.created_at}  ${h.status.padEnd(12)} ${h.connection}/${h.tool_name} by ${h.agent_identity.id}: ${h.arguments_summary}`,
  );
  if (list.next_before) lines.push(`More: --before ${list.next_before}`);
  return [list, lines.join('\n') || 'No holds.'];
}

function shown(record: ReturnType<typeof holdRecord>): Answer {
  return [record, stringify(record).trimEnd()];
}

export const holdsCommands: Record<string, LocalCommand> = {
  'holds list': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const { before, limit, ...filters } = holdListOptions(values);
      return listed(await listHoldRecords(ctx, workspace.id, filters, { before, limit }));
    },
  },
  'holds show': {
    maxWords: Infinity,
    async run(ctx, words, values) {
      const id = holdReference(words);
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      return shown(holdRecord(await getHold(ctx, workspace.id, id)));
    },
  },
};

export const remoteHoldsCommands: Record<string, RemoteCommand> = {
  'holds list': {
    maxWords: 2,
    async run(remote, _words, values) {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries(holdListOptions(values)))
        if (value !== undefined) query.set(name, String(value));
      const { body } = await callService(remote, 'GET', `api/v1/workspace/holds?${query}`);
      return listed(body as HoldList);
    },
  },
  'holds show': {
    maxWords: Infinity,
    async run(remote, words) {
      const id = holdReference(words);
      const { body } = await callService(remote, 'GET', `api/v1/holds/${encodeURIComponent(id)}`);
      return shown(body as ReturnType<typeof holdRecord>);
    },
  },
};
