import { GENESIS_HASH } from '../../packages/sdk/src/chain.ts';
import { newWorkspaceId } from '../domain/ids.ts';
import { UniqueViolationError } from '../store/db.ts';
import { insertChainHead } from '../store/evidence.ts';
import { findWorkspaceBySlug, insertWorkspace, type Plan, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, notFound, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';

export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

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
    createdAt: ctx.now(),
  };
  try {
    await ctx.db.transaction(async (tx) => {
      if (onlyIfFirst) {
        if (ctx.db.dialect === 'postgres') await tx.one('SELECT pg_advisory_xact_lock(7294003)');
        const existing = await tx.one<{ n: number }>('SELECT COUNT(*) AS n FROM workspaces');
        if (existing!.n > 0) throw new ServiceError('validation_failed', 'the service is already set up');
      }
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

export async function requireWorkspace(ctx: ServiceContext, slug: string): Promise<Workspace> {
  const workspace = await findWorkspaceBySlug(ctx.db, slug);
  if (!workspace) throw notFound('workspace');
  return workspace;
}
