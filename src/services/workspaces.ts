import { GENESIS_HASH } from '../../packages/sdk/src/chain.ts';
import { MAX_RATE_LIMIT } from '../config.ts';
import { newWorkspaceId } from '../domain/ids.ts';
import { UniqueViolationError } from '../store/db.ts';
import { insertChainHead } from '../store/evidence.ts';
import {
  countWorkspaces,
  findWorkspace,
  findWorkspaceBySlug,
  insertWorkspace,
  type Plan,
  updateWorkspaceRateLimits,
  type Workspace,
} from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, notFound, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** Why SLACK_CHANNEL is refused once there is more than one workspace. */
export const SHARED_SLACK_CHANNEL =
  'SLACK_CHANNEL would post the holds of every workspace to one Slack channel: unset it and give each ' +
  'workspace its own channel (slack: { channel } in its workspace file, or the Slack page of the app)';

/** `onlyIfFirst`: the first run's set-up, which must create one workspace however many ask at once. */
export async function createWorkspace(
  ctx: ServiceContext,
  input: { slug: string; name: string; plan?: Plan },
  { onlyIfFirst = false } = {},
): Promise<Workspace> {
  if (!SLUG_PATTERN.test(input.slug)) {
    throw invalid(
      'slug',
      'must be 1-63 lowercase letters, digits or dashes, not starting or ending with a dash',
    );
  }
  if (input.name.trim() === '' || input.name.length > 200) throw invalid('name', 'must be 1-200 characters');
  const workspace: Workspace = {
    id: newWorkspaceId(),
    slug: input.slug,
    name: input.name.trim(),
    plan: input.plan ?? 'standard',
    logoUrl: null,
    accentColor: null,
    slackChannel: null,
    teamsChannel: null,
    apiRateLimit: null,
    mcpRateLimit: null,
    oauthGrantRole: 'admin',
    keyBinding: 'optional',
    remind: null,
    frozenAt: null,
    frozenReason: null,
    frozenBy: null,
    createdAt: ctx.now(),
  };
  try {
    await ctx.db.transaction(async (tx) => {
      if (onlyIfFirst && ctx.db.dialect === 'postgres') await tx.one('SELECT pg_advisory_xact_lock(7294003)');
      const existing = await countWorkspaces(tx);
      if (onlyIfFirst && existing > 0)
        throw new ServiceError('validation_failed', 'the service is already set up');
      // SLACK_CHANNEL would show this workspace's holds to another workspace's channel.
      if (existing > 0 && ctx.channels.slack?.channel)
        throw new ServiceError('validation_failed', SHARED_SLACK_CHANNEL);
      await insertWorkspace(tx, workspace);
      await insertChainHead(tx, workspace.id, GENESIS_HASH);
      const chain = await openChain(tx, ctx, workspace.id);
      await chain.append('workspace.created', {
        slug: workspace.slug,
        name: workspace.name,
        plan: workspace.plan,
      });
    });
  } catch (error) {
    if (error instanceof UniqueViolationError) throw invalid('slug', 'is taken');
    throw error;
  }
  return workspace;
}

/** At start: SLACK_CHANNEL is for a deployment of one workspace; with more, the service refuses to start. */
export async function checkSharedSlackChannel(ctx: ServiceContext): Promise<void> {
  if (ctx.channels.slack?.channel && (await countWorkspaces(ctx.db)) > 1)
    throw new Error(SHARED_SLACK_CHANNEL);
}

export async function requireWorkspace(ctx: ServiceContext, slug: string): Promise<Workspace> {
  const workspace = await findWorkspaceBySlug(ctx.db, slug);
  if (!workspace) throw notFound('workspace');
  return workspace;
}

/** The two quotas an operator may set per workspace: `v1` (the Core API's buckets) and `mcp`. */
export type LimitName = 'v1' | 'mcp';

/** A quota in force: the workspace's own, or the deployment's setting. */
export interface EffectiveLimit {
  limit: number;
  source: 'workspace' | 'deployment';
}

export interface WorkspaceLimits {
  slug: string;
  /** Requests a minute per Core API bucket (v1, v1-wait, v1-reports, v1-verify). */
  v1: EffectiveLimit;
  /** Tool calls a minute per API key through the MCP endpoints; 0: no limit (MCP_RATE_LIMIT=0). */
  mcp: EffectiveLimit;
}

export const LIMIT_RANGE = `a whole number from 1 to ${MAX_RATE_LIMIT}, or default`;

/** The quotas in force for a workspace, with this process's settings as the deployment's. */
export function workspaceLimits(ctx: ServiceContext, workspace: Workspace): WorkspaceLimits {
  const effective = (override: number | null, setting: number): EffectiveLimit =>
    override === null ? { limit: setting, source: 'deployment' } : { limit: override, source: 'workspace' };
  return {
    slug: workspace.slug,
    v1: effective(workspace.apiRateLimit, ctx.apiRateLimit),
    mcp: effective(workspace.mcpRateLimit, ctx.mcpRateLimit),
  };
}

/**
 * Sets a workspace's own quotas (null: back to the deployment's setting); a limit not given stays.
 * Only the operator's command line calls this: neither the workspace file nor the app can. A change is
 * recorded as `workspace.limits_changed` with the old and new overrides; setting what is already set
 * changes nothing and records nothing.
 */
export async function setWorkspaceLimits(
  ctx: ServiceContext,
  workspace: Workspace,
  changes: Partial<Record<LimitName, number | null>>,
): Promise<{ workspace: Workspace; changed: boolean }> {
  for (const name of ['v1', 'mcp'] as const) {
    const value = changes[name];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || value < 1 || value > MAX_RATE_LIMIT)
      throw invalid(name, `must be ${LIMIT_RANGE}`);
  }
  return ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    // Read under the chain's lock: the old values are those this change replaces.
    const current = await findWorkspace(tx, workspace.id);
    if (!current) throw notFound('workspace');
    const columns = { v1: 'apiRateLimit', mcp: 'mcpRateLimit' } as const;
    const changed: Partial<Record<LimitName, { from: number | null; to: number | null }>> = {};
    const update: { apiRateLimit?: number | null; mcpRateLimit?: number | null } = {};
    for (const name of ['v1', 'mcp'] as const) {
      const to = changes[name];
      const from = current[columns[name]];
      if (to === undefined || to === from) continue;
      changed[name] = { from, to };
      update[columns[name]] = to;
    }
    if (Object.keys(changed).length === 0) return { workspace: current, changed: false };
    await updateWorkspaceRateLimits(tx, workspace.id, update);
    await chain.append('workspace.limits_changed', changed);
    return { workspace: { ...current, ...update }, changed: true };
  });
}
