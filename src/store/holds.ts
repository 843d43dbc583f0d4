import type {
  DecisionChannel,
  Environment,
  Execution,
  Hold,
  HoldStatus,
  SubmitStatus,
  Verdict,
} from '../domain/hold.ts';
import { summarizeArguments } from '../domain/summary.ts';
import { columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import type { Statement } from './statements.ts';
import { Where } from './where.ts';

/** Every column of `holds`. */
export const holds = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  environment: text<Environment>('environment'),
  connection: text('connection'),
  toolName: text('tool_name'),
  agentId: text('agent_id'),
  agentLabel: nullable(text('agent_label')),
  requestedFor: nullable(text('requested_for')),
  arguments: json<Record<string, unknown>>('arguments'),
  context: json<Record<string, unknown>>('context'),
  idempotencyKey: text('idempotency_key'),
  fingerprint: text('fingerprint'),
  submitStatus: text<SubmitStatus>('submit_status'),
  status: text<HoldStatus>('status'),
  ruleName: nullable(text('rule_name')),
  approvers: json<string[]>('approvers'),
  approvalsRequired: integer('approvals_required'),
  approvalsReceived: integer('approvals_received'),
  createdAt: integer('created_at'),
  expiresAt: nullable(integer('expires_at')),
  verdict: nullable(text<Verdict>('verdict')),
  reason: nullable(text('reason')),
  channel: nullable(text<DecisionChannel>('channel')),
  decidedAt: nullable(integer('decided_at')),
  mcpServerId: nullable(text('mcp_server_id')),
  callKey: nullable(text('call_key')),
  executionStatus: nullable(text<Execution['status']>('execution_status')),
  executionStartedAt: nullable(integer('execution_started_at')),
  executionCompletedAt: nullable(integer('execution_completed_at')),
  executionOutcome: nullable(json<unknown>('execution_outcome')),
  /** Null for holds stored before migration 015. */
  argumentsSummary: nullable(text('arguments_summary')),
  /** The arguments' length as JSON, in characters. */
  argumentsSize: integer('arguments_size'),
  /** Where the hold's own entries are in its chain (services/hold-evidence.ts); null: none recorded. */
  submittedSeq: nullable(integer('submitted_seq')),
  approvedSeq: nullable(integer('approved_seq')),
  approvalSeqs: nullable(json<number[]>('approval_seqs')),
});

/** What a Hold is read from: its record, not what lists and its evidence keep of it. */
const holdColumns = holds.omit(
  'argumentsSummary',
  'argumentsSize',
  'submittedSeq',
  'approvedSeq',
  'approvalSeqs',
);
const holdRefs = holds.pick('id', 'workspaceId');

function toHold(row: Row | undefined): Hold | undefined {
  if (!row) return undefined;
  const { executionStatus, executionStartedAt, executionCompletedAt, executionOutcome, ...rest } =
    holdColumns.decode(row);
  return {
    ...rest,
    execution:
      executionStatus === null
        ? null
        : {
            status: executionStatus,
            startedAt: executionStartedAt!,
            completedAt: executionCompletedAt,
            outcome: executionOutcome,
          },
  };
}

/** A hold's execution as its four columns, all null before it starts. */
const executionColumns = (execution: Execution | null) => ({
  executionStatus: execution?.status ?? null,
  executionStartedAt: execution?.startedAt ?? null,
  executionCompletedAt: execution?.completedAt ?? null,
  executionOutcome: execution ? (execution.outcome ?? null) : null,
});

/** How long the summary of a hold's arguments kept for lists may be. */
export const LINE_SUMMARY_LENGTH = 160;

/** `submittedSeq`: the seq of the hold's `hold.submitted` entry, appended in the same transaction. */
export function insertHoldStatement(hold: Hold, submittedSeq: number | null = null): Statement {
  const { execution, ...fields } = hold;
  const written = holds.omit('approvedSeq', 'approvalSeqs').insert({
    ...fields,
    // A new hold's execution is at most running: an allowed proxy call about to go upstream.
    ...executionColumns(execution),
    argumentsSummary: summarizeArguments(hold.arguments, LINE_SUMMARY_LENGTH).text,
    argumentsSize: JSON.stringify(hold.arguments).length,
    submittedSeq,
  });
  return {
    text: `INSERT INTO holds (${written.columns}) VALUES ${written.values}`,
    params: written.params,
  };
}

const evidenceSeqs = holds.pick('submittedSeq', 'approvedSeq');

/** Where the hold's own entries are in its chain (services/hold-evidence.ts); null: none recorded. */
export const holdEvidenceSeqs = async (sql: Sql, workspaceId: string, holdId: string) => {
  const row = await sql.one(
    `SELECT ${evidenceSeqs.select()} FROM holds WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, holdId],
  );
  return row ? evidenceSeqs.decode(row) : { submittedSeq: null, approvedSeq: null };
};

const approvalSeqs = holds.pick('approvalSeqs');

/** The seqs of the hold's `hold.approval_recorded` entries of approvals so far (four eyes and more). */
export const approvalSeqsOf = async (sql: Sql, workspaceId: string, holdId: string): Promise<number[]> => {
  const row = await sql.one(
    `SELECT ${approvalSeqs.select()} FROM holds WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, holdId],
  );
  return (row && approvalSeqs.decode(row).approvalSeqs) ?? [];
};

/** Sets some of the hold's chain seqs. */
function setSeqs(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  seqs: Partial<RecordOf<typeof holds.fields>>,
) {
  const { set, params } = holds.update(seqs, 3);
  return sql.run(`UPDATE holds SET ${set} WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    holdId,
    ...params,
  ]);
}

export const setApprovalSeqs = (sql: Sql, workspaceId: string, holdId: string, seqs: readonly number[]) =>
  setSeqs(sql, workspaceId, holdId, { approvalSeqs: [...seqs] });

/** The seq of the `hold.approved` entry that approved the hold, in the decision's transaction. */
export const setApprovedSeq = (sql: Sql, workspaceId: string, holdId: string, seq: number) =>
  setSeqs(sql, workspaceId, holdId, { approvedSeq: seq });

/** `lock` takes a row lock on PostgreSQL, for a read that is followed by a state change. */
export async function findHold(
  sql: Sql,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<Hold | undefined> {
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE id = $1 AND workspace_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [id, workspaceId],
  );
  return toHold(row);
}

/** For the public status page, which knows no workspace: the reference alone is the secret. */
export async function findHoldByReference(sql: Sql, id: string): Promise<Hold | undefined> {
  return toHold(await sql.one(`SELECT ${holdColumns.select()} FROM holds WHERE id = $1`, [id]));
}

export async function findHoldByIdempotencyKey(
  sql: Sql,
  workspaceId: string,
  key: string,
): Promise<Hold | undefined> {
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE workspace_id = $1 AND idempotency_key = $2`,
    [workspaceId, key],
  );
  return toHold(row);
}

/** Writes the mutable part of a hold: its status, approvals, decision and execution. */
export async function updateHoldState(sql: Sql, hold: Hold): Promise<void> {
  const { set, params } = holds.update(
    {
      status: hold.status,
      approvalsReceived: hold.approvalsReceived,
      verdict: hold.verdict,
      reason: hold.reason,
      channel: hold.channel,
      decidedAt: hold.decidedAt,
      ...executionColumns(hold.execution),
    },
    2,
  );
  await sql.run(`UPDATE holds SET ${set} WHERE id = $1`, [hold.id, ...params]);
}

/** Pending holds whose deadline has passed, oldest deadline first. */
export const listOverdueHolds = async (sql: Sql, now: number, limit: number) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds WHERE status = 'pending' AND expires_at <= $1
       ORDER BY expires_at LIMIT $2`,
      [now, limit],
    ),
  );

const deadline = columns({ at: nullable(integer('at')) });

export const nextDeadline = async (sql: Sql) => {
  const row = await sql.one(`SELECT MIN(expires_at) AS at FROM holds WHERE status = 'pending'`);
  return row ? deadline.decode(row).at : null;
};

/** Every column of `hold_decisions`: a member's decision on a hold. */
const holdDecisions = columns({
  holdId: text('hold_id'),
  memberId: text('member_id'),
  verdict: text('verdict'),
  comment: nullable(text('comment')),
  channel: text('channel'),
  decidedAt: integer('decided_at'),
  /** The member a delegate decided for. */
  onBehalfOf: nullable(text('on_behalf_of')),
});

export async function insertHoldDecision(
  sql: Sql,
  decision: Omit<RecordOf<typeof holdDecisions.fields>, 'decidedAt'> & { at: number },
): Promise<void> {
  const { at, ...fields } = decision;
  const written = holdDecisions.insert({ ...fields, decidedAt: at });
  await sql.run(`INSERT INTO hold_decisions (${written.columns}) VALUES ${written.values}`, written.params);
}

const pastDecisions = holdDecisions.pick('memberId', 'onBehalfOf');

/** Who decided the hold so far, and for whom (a delegate). */
export const listPastDecisions = async (sql: Sql, holdId: string) =>
  pastDecisions.decodeAll(
    await sql.all(`SELECT ${pastDecisions.select()} FROM hold_decisions WHERE hold_id = $1`, [holdId]),
  );

/** Calls of the workspace after `since` (epoch ms), narrowed to a connection and tool and/or an agent. */
export interface CallScope {
  connection: string;
  toolName: string | null;
  agentId: string | null;
}

/**
 * The count of a workspace's calls in a frequency scope since `since`, as a subquery whose parameters
 * are appended to `params` (`$1` is the workspace).
 */
export function recentCallsCount(scope: CallScope, since: number, params: unknown[]): string {
  const where = new Where('workspace_id = $1', params).and('created_at > ?', since);
  if (scope.toolName !== null)
    where.and('connection = ? AND tool_name = ?', scope.connection, scope.toolName);
  if (scope.agentId !== null) where.and('agent_id = ?', scope.agentId);
  return `(SELECT COUNT(*) FROM holds WHERE ${where})`;
}

const callCount = columns({ n: integer('n') });

export async function countRecentCalls(
  sql: Sql,
  workspaceId: string,
  scope: CallScope,
  since: number,
): Promise<number> {
  const params: unknown[] = [workspaceId];
  const count = recentCallsCount(scope, since, params);
  return callCount.decode((await sql.one(`SELECT ${count} AS n`, params))!).n;
}

const replayedCalls = holds.pick(
  'id',
  'connection',
  'toolName',
  'agentId',
  'arguments',
  'createdAt',
  'submitStatus',
  'ruleName',
  'approvalsRequired',
  'expiresAt',
);

export type ReplayedCall = RecordOf<typeof replayedCalls.fields>;

/** One page of a workspace's calls in [from, to), oldest first, after the (createdAt, id) cursor. */
export async function listCallsForReplay(
  sql: Sql,
  workspaceId: string,
  range: { from: number; to: number },
  after: { createdAt: number; id: string } | null,
  limit: number,
): Promise<ReplayedCall[]> {
  const rows = await sql.all(
    `SELECT ${replayedCalls.select()}
     FROM holds WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3
       AND (created_at > $4 OR (created_at = $4 AND id > $5))
     ORDER BY created_at, id LIMIT $6`,
    [workspaceId, range.from, range.to, after?.createdAt ?? -1, after?.id ?? '', limit],
  );
  return replayedCalls.decodeAll(rows);
}

/** A hold as a list shows it: everything but its arguments, which are summarized. */
export interface HoldLine extends Pick<
  Hold,
  | 'id'
  | 'environment'
  | 'connection'
  | 'toolName'
  | 'agentId'
  | 'agentLabel'
  | 'requestedFor'
  | 'status'
  | 'ruleName'
  | 'approvers'
  | 'approvalsRequired'
  | 'approvalsReceived'
  | 'createdAt'
  | 'expiresAt'
  | 'verdict'
  | 'channel'
  | 'decidedAt'
> {
  /** At most LINE_SUMMARY_LENGTH characters: `amount=4200, currency="EUR"`. */
  argumentsSummary: string;
  /** The arguments' length as JSON, in characters. */
  argumentsSize: number;
}

/** Holds stored before summaries were kept (migration 015) have theirs made on reading, while small. */
const LEGACY_SUMMARY_SOURCE = 64 * 1024;

/**
 * Nothing here reads `arguments`: on SQLite a column stored after a large value costs a walk through
 * its overflow pages, so these are all read from the covering index holds_pending_lines for the inbox.
 */
const lineColumns = holds.pick(
  'id',
  'environment',
  'connection',
  'toolName',
  'agentId',
  'agentLabel',
  'requestedFor',
  'status',
  'ruleName',
  'approvers',
  'approvalsRequired',
  'approvalsReceived',
  'createdAt',
  'expiresAt',
  'verdict',
  'channel',
  'decidedAt',
  'argumentsSummary',
  'argumentsSize',
);

/** A legacy hold's arguments, when small enough to summarize. */
const legacySources = columns({ id: text('id'), source: nullable(json<Record<string, unknown>>('source')) });

/** Rows as lines; the few stored before migration 015 get a summary made from their arguments. */
async function toLines(sql: Sql, read: Row[]): Promise<HoldLine[]> {
  const rows = lineColumns.decodeAll(read);
  const legacy = rows.filter((row) => row.argumentsSummary === null).map((row) => row.id);
  const sources = new Map<string, Record<string, unknown> | null>();
  if (legacy.length > 0) {
    const found = await sql.all(
      `SELECT id, CASE WHEN length(arguments) <= ${LEGACY_SUMMARY_SOURCE} THEN arguments END AS source
       FROM holds WHERE id IN (${legacy.map((_, i) => `$${i + 1}`).join(', ')})`,
      legacy,
    );
    for (const { id, source } of legacySources.decodeAll(found)) sources.set(id, source);
  }
  return rows.map((row) => {
    const source = sources.get(row.id) ?? null;
    const argumentsSummary =
      row.argumentsSummary ??
      (source === null
        ? `${row.argumentsSize} characters of arguments`
        : summarizeArguments(source, LINE_SUMMARY_LENGTH).text);
    return { ...row, argumentsSummary };
  });
}

/** A workspace's pending holds as lines, soonest deadline first (index holds_pending_lines). */
export async function listPendingLines(sql: Sql, workspaceId: string, limit: number): Promise<HoldLine[]> {
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return toLines(sql, rows);
}

/** These holds of the workspace as lines, in no particular order; unknown ids are left out. */
export async function listLinesById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<HoldLine[]> {
  if (ids.length === 0) return [];
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return toLines(sql, rows);
}

const holdArguments = holds.pick('id', 'arguments');

/** The arguments of these holds of the workspace, parsed. */
export async function listArgumentsById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  if (ids.length === 0) return new Map();
  const rows = await sql.all(
    `SELECT ${holdArguments.select()} FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return new Map(holdArguments.decodeAll(rows).map((row) => [row.id, row.arguments]));
}

/** Hold decisions `d`, with their member `m` and the member `p` a delegate decided for. */
const decisionColumns = `d.member_id AS "memberId", m.name, m.email, d.verdict, d.comment, d.channel,
  d.decided_at AS "decidedAt", d.on_behalf_of AS "onBehalfOf", p.name AS "onBehalfOfName"`;

const decisionLines = columns({
  ...holdDecisions.omit('holdId').fields,
  name: text('name'),
  email: text('email'),
  /** The member a delegate decided for, by name; null when members decided themselves. */
  onBehalfOfName: nullable(text('name')),
});

export type HoldDecisionRow = RecordOf<typeof decisionLines.fields>;

const decisionLinesOfHolds = columns({ ...decisionLines.fields, holdId: text('hold_id') });

/** The member decisions of these holds, oldest first. */
export async function listDecisionsOfHolds(
  sql: Sql,
  holdIds: readonly string[],
): Promise<(HoldDecisionRow & { holdId: string })[]> {
  if (holdIds.length === 0) return [];
  const rows = await sql.all(
    `SELECT d.hold_id AS "holdId", ${decisionColumns}
     FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
     WHERE d.hold_id IN (${holdIds.map((_, i) => `$${i + 1}`).join(', ')}) ORDER BY d.decided_at`,
    [...holdIds],
  );
  return decisionLinesOfHolds.decodeAll(rows);
}

export const listHoldDecisions = async (sql: Sql, holdId: string) =>
  decisionLines.decodeAll(
    await sql.all(
      `SELECT ${decisionColumns}
       FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
       WHERE d.hold_id = $1 ORDER BY d.decided_at`,
      [holdId],
    ),
  );

const pendingApprovers = holds.pick('id', 'approvers', 'expiresAt', 'agentId', 'requestedFor');

/** Pending holds without their arguments: enough to tell whom each waits for (a count on every page). */
export async function listPendingApprovers(sql: Sql, workspaceId: string, limit: number) {
  const rows = await sql.all(
    `SELECT ${pendingApprovers.select()}
     FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return pendingApprovers.decodeAll(rows);
}

export interface HoldFilters {
  status?: string;
  /**
   * A glob over the tool's name (`payments.*`: `*` any run of characters, `?` one, the rest literal).
   * listHolds reads it as a LIKE pattern that matches at least what `compileGlob` matches (SQLite's LIKE
   * ignores ASCII case), so the caller checks each line with `compileGlob`.
   */
  tool?: string;
  /** The agent's id or its label, exactly. */
  agent?: string;
  /** Created at or after (epoch ms). */
  from?: number;
  /** Created before (epoch ms). */
  to?: number;
}

/**
 * Up to `limit` holds of the workspace as lines (never their arguments), read away from a (createdAt, id)
 * cursor on index holds_by_workspace_created_id: `older` ones newest first (from the newest when
 * `from` is null), `newer` ones oldest first.
 */
export async function listHolds(
  sql: Sql,
  workspaceId: string,
  filters: HoldFilters,
  page: { direction: 'older' | 'newer'; from: { createdAt: number; id: string } | null },
  limit: number,
): Promise<HoldLine[]> {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filters.status) where.and('status = ?', filters.status);
  if (filters.tool) {
    // `\`, `%` and `_` are literal; `*` is `%`. A `?` is one UTF-16 unit for compileGlob but LIKE counts
    // characters, so a run of n `?` may be as few as n/2 characters (outside the BMP): `_…_%` then.
    const like = filters.tool.replace(/[\\%_*]|\?+/g, (part) =>
      part === '*'
        ? '%'
        : part[0] !== '?'
          ? `\\${part}`
          : part.length === 1
            ? '_'
            : `${'_'.repeat(Math.ceil(part.length / 2))}%`,
    );
    where.and(`tool_name LIKE ? ESCAPE '\\'`, like);
  }
  if (filters.agent) where.and('(agent_id = ? OR agent_label = ?)', filters.agent, filters.agent);
  if (filters.from !== undefined) where.and('created_at >= ?', filters.from);
  if (filters.to !== undefined) where.and('created_at < ?', filters.to);
  const newer = page.direction === 'newer';
  if (page.from) {
    const { createdAt, id } = page.from;
    const than = newer ? '>' : '<';
    where.and(`(created_at ${than} ? OR (created_at = ? AND id ${than} ?))`, createdAt, createdAt, id);
  }
  const order = newer ? 'created_at, id' : 'created_at DESC, id DESC';
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE ${where} ORDER BY ${order} LIMIT ${where.param(limit)}`,
    where.params,
  );
  return toLines(sql, rows);
}

const pendingDecisionColumns = holdDecisions.pick('holdId', 'memberId', 'onBehalfOf');

/** The decisions so far of a workspace's pending holds, by hold: who decided, and for whom. */
export async function pendingDecisions(
  sql: Sql,
  workspaceId: string,
): Promise<Map<string, { memberId: string; onBehalfOf: string | null }[]>> {
  const rows = await sql.all(
    `SELECT ${pendingDecisionColumns.select('d')}
     FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
     WHERE h.workspace_id = $1 AND h.status = 'pending'`,
    [workspaceId],
  );
  const byHold = new Map<string, { memberId: string; onBehalfOf: string | null }[]>();
  for (const { holdId, ...decision } of pendingDecisionColumns.decodeAll(rows))
    byHold.set(holdId, [...(byHold.get(holdId) ?? []), decision]);
  return byHold;
}

/**
 * An open proxy operation for a call key (the placeholder of its parameter): an identical call's hold
 * that has not ended without running (expired, failed, allowed) and was not withdrawn by its agent.
 */
export const openProxyHoldWhere = (callKey: string) =>
  `call_key = ${callKey} AND status NOT IN ('expired', 'failed', 'auto_allowed')
   AND NOT (status = 'rejected' AND channel = 'agent')`;

export async function findOpenProxyHold(
  sql: Sql,
  workspaceId: string,
  callKey: string,
): Promise<Hold | undefined> {
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$2')} ORDER BY created_at DESC LIMIT 1`,
    [workspaceId, callKey],
  );
  return toHold(row);
}

/** Upstream calls still marked running that started before `startedBefore` (index holds_running_executions). */
export const listStaleExecutions = async (sql: Sql, startedBefore: number) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds
       WHERE execution_status = 'running' AND execution_started_at < $1`,
      [startedBefore],
    ),
  );

/** Approved proxy holds nobody has started to run yet, oldest first. */
export const listHoldsToExecute = async (sql: Sql, limit: number) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds
       WHERE status = 'approved' AND mcp_server_id IS NOT NULL AND execution_status IS NULL ORDER BY created_at LIMIT $1`,
      [limit],
    ),
  );

/** A tool's pending holds, oldest first (deciding them when the tool is classified). */
const holdOnlyIds = holds.pick('id');

export const pendingHoldIdsOfTool = async (
  sql: Sql,
  workspaceId: string,
  tool: { connection: string; name: string },
  limit: number,
) =>
  holdOnlyIds.decodeAll(
    await sql.all(
      `SELECT ${holdOnlyIds.select()} FROM holds WHERE workspace_id = $1 AND status = 'pending' AND connection = $2 AND tool_name = $3
       ORDER BY created_at, id LIMIT $4`,
      [workspaceId, tool.connection, tool.name, limit],
    ),
  );
