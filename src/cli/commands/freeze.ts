/**
 * `workspace freeze|unfreeze`: the kill switch, in the database or, with APPROVALS_URL, through the
 * Core API with an admin-scope key (whose workspace must be the slug given).
 */
import type { FreezeState } from '../../services/freeze.ts';
import { freezeWorkspace, unfreezeWorkspace } from '../../services/freeze.ts';
import { callService } from '../remote.ts';
import { type Answer, required, UsageError, type Values } from '../usage.ts';
import type { LocalCommand, RemoteCommand } from './command.ts';
import { workspaceNamed } from './workspace.ts';

/** Who froze it, as the evidence names the command line run where the database is. */
const CLI_OPERATOR = 'approvals workspace (CLI)';

function slugOf(words: string[]): string {
  const slug = words[2];
  if (!slug) throw new UsageError(`${words.slice(0, 2).join(' ')} needs a slug`);
  return slug;
}

function described(state: FreezeState): Answer {
  const text = state.frozen
    ? `${state.changed ? 'Froze' : 'Already frozen:'} ${state.workspace}: every new hold is denied and no approved MCP call runs until it is unfrozen (reason: ${state.reason}).`
    : `${state.changed ? 'Unfroze' : 'Not frozen:'} ${state.workspace}: holds are decided by its rules again.`;
  return [state, text];
}

export const freezeCommands: Record<string, LocalCommand> = {
  'workspace freeze': {
    maxWords: 3,
    async run(ctx, words, values: Values) {
      const slug = slugOf(words);
      const reason = required(values, 'reason');
      const workspace = await workspaceNamed(ctx, slug);
      return described(await freezeWorkspace(ctx, workspace, { reason, by: CLI_OPERATOR }));
    },
  },
  'workspace unfreeze': {
    maxWords: 3,
    async run(ctx, words) {
      const workspace = await workspaceNamed(ctx, slugOf(words));
      return described(await unfreezeWorkspace(ctx, workspace, { by: CLI_OPERATOR }));
    },
  },
};

const post = async (remote: Parameters<RemoteCommand['run']>[0], path: string, body: object) =>
  (
    await callService(remote, 'POST', path, {
      body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json' },
    })
  ).body as FreezeState;

export const remoteFreezeCommands: Record<string, RemoteCommand> = {
  'workspace freeze': {
    maxWords: 3,
    async run(remote, words, values) {
      const body = { workspace: slugOf(words), reason: required(values, 'reason') };
      return described(await post(remote, 'api/v1/workspace/freeze', body));
    },
  },
  'workspace unfreeze': {
    maxWords: 3,
    async run(remote, words) {
      return described(await post(remote, 'api/v1/workspace/unfreeze', { workspace: slugOf(words) }));
    },
  },
};
