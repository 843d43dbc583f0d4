/** `workspace create|limits`, `keys create|revoke` and `users invite`: a workspace and who may use it. */
import { loadConfig, MAX_RATE_LIMIT } from '../../config.ts';
import { createApiKey, revokeApiKey } from '../../services/api-keys.ts';
import type { ServiceContext } from '../../services/context.ts';
import { ServiceError } from '../../services/errors.ts';
import { inviteLink } from '../../services/sign-in.ts';
import {
  createWorkspace,
  LIMIT_RANGE,
  type LimitName,
  requireWorkspace,
  setWorkspaceLimits,
  type WorkspaceLimits,
  workspaceLimits,
} from '../../services/workspaces.ts';
import { type Answer, required, UsageError, type Values } from '../usage.ts';
import type { LocalCommand } from './command.ts';

/** Where this command reads and writes: what "not found" was looked for in. */
function storageText(): string {
  const { databaseUrl, dataDir } = loadConfig();
  return databaseUrl
    ? 'the PostgreSQL database of DATABASE_URL'
    : `the SQLite database in DATA_DIR ${dataDir}`;
}

/** The workspace of a slug given on the command line; not found names the slug and where it looked. */
export async function workspaceNamed(ctx: ServiceContext, slug: string) {
  try {
    return await requireWorkspace(ctx, slug);
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found')
      throw new ServiceError('not_found', `workspace ${slug} not found in ${storageText()}`);
    throw error;
  }
}

/** `--v1 6000` → 6000; `--v1 default` → null (the deployment's setting). */
function limitOption(name: LimitName, text: string): number | null {
  if (text === 'default') return null;
  const value = /^\d{1,7}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= MAX_RATE_LIMIT)) throw new UsageError(`--${name} must be ${LIMIT_RANGE}`);
  return value;
}

function describeLimits(limits: WorkspaceLimits): string {
  const source = (limit: WorkspaceLimits['v1']) =>
    limit.source === 'workspace' ? 'set for this workspace' : 'the deployment default';
  const mcp = limits.mcp.limit === 0 ? 'no limit' : `${limits.mcp.limit} a minute per API key`;
  return [
    `Core API (--v1): ${limits.v1.limit} requests a minute per bucket (${source(limits.v1)})`,
    `MCP tool calls (--mcp): ${mcp} (${source(limits.mcp)})`,
  ].join('\n');
}

async function limits(ctx: ServiceContext, words: string[], values: Values): Promise<Answer> {
  const slug = words[2];
  if (!slug) throw new UsageError('workspace limits needs a slug');
  // Checked before anything is read, so a bad value changes nothing.
  const changes: Partial<Record<LimitName, number | null>> = {};
  for (const name of ['v1', 'mcp'] as const) {
    const text = values[name];
    if (text !== undefined) changes[name] = limitOption(name, text);
  }
  const workspace = await workspaceNamed(ctx, slug);
  if (Object.keys(changes).length === 0) {
    const limits = workspaceLimits(ctx, workspace);
    return [limits, describeLimits(limits)];
  }
  const result = await setWorkspaceLimits(ctx, workspace, changes);
  const limits = workspaceLimits(ctx, result.workspace);
  const what = result.changed ? `Changed the limits of ${slug}.` : `The limits of ${slug} were already so.`;
  return [{ ...limits, changed: result.changed }, `${what}\n${describeLimits(limits)}`];
}

async function createKey(ctx: ServiceContext, values: Values): Promise<Answer> {
  const env = required(values, 'env');
  if (env !== 'live' && env !== 'test') throw new UsageError('--env must be live or test');
  const scope = values.scope ?? 'agent';
  if (scope !== 'agent' && scope !== 'admin') throw new UsageError('--scope must be agent or admin');
  const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
  const key = await createApiKey(ctx, {
    workspace,
    env,
    scope,
    name: values.name,
    agent: values.agent,
    owner: values.owner,
  });
  // `agent` and `owner` only for a bound key: the answer of an unbound one is as it always was.
  const { agent, owner, ...unbound } = key;
  const bound = agent
    ? ` bound to agent ${agent}${owner ? ` of ${owner} (who may not approve its holds)` : ''}`
    : '';
  const out = agent ? key : unbound;
  return [out, `Created ${scope} key ${key.id}${bound}. Store it now, it is not shown again:\n${key.key}`];
}

export const workspaceCommands: Record<string, LocalCommand> = {
  'workspace create': {
    maxWords: Infinity,
    async run(ctx, words, values) {
      const slug = words[2];
      if (!slug) throw new UsageError('workspace create needs a slug');
      const plan = values.plan;
      if (plan !== undefined && plan !== 'legacy_free') throw new UsageError('--plan must be legacy_free');
      const workspace = await createWorkspace(ctx, { slug, name: required(values, 'name'), plan });
      const out = { id: workspace.id, slug: workspace.slug, name: workspace.name };
      return [out, `Created workspace ${out.slug} (${out.id}).`];
    },
  },
  'workspace limits': { maxWords: 3, run: limits },
  'keys create': { maxWords: Infinity, run: (ctx, _words, values) => createKey(ctx, values) },
  'keys revoke': {
    maxWords: Infinity,
    async run(ctx, words) {
      const id = words[2];
      if (!id) throw new UsageError('keys revoke needs a key id');
      const result = await revokeApiKey(ctx, id);
      return [result, `Revoked key ${id}.`];
    },
  },
  'users invite': {
    maxWords: 2,
    async run(ctx, _words, values) {
      const workspace = await workspaceNamed(ctx, required(values, 'workspace'));
      const invite = await inviteLink(ctx, workspace, required(values, 'email'));
      return [invite, `One-time sign-in link (valid for 7 days):\n${invite.url}`];
    },
  },
};
