import { GENESIS_HASH } from '../../packages/sdk/src/chain.ts';
import { newWorkspaceId } from '../domain/ids.ts';
import { UniqueViolationError } from '../store/db.ts';
import { insertChainHead } from '../store/evidence.ts';
import {
  countWorkspaces,
  findWorkspaceBySlug,
  insertWorkspace,
  type Plan,
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
