/**
 * Publishes signed chain heads outside the database, at most once a minute per workspace whose chain
 * moved: into the checkpoints list (GET /api/v1/audit/checkpoints) and, where the workspace has a
 * webhook endpoint, as an `evidence.checkpoint` event. Whoever keeps them can later prove that the
 * chain was not rewritten or cut off since. A head is published only after the entries since the
 * last published checkpoint were checked and its signature verified with a trusted key: the service
 * never vouches for a chain it has not checked.
 */
import { ChainWalk, type Checkpoint } from '../../packages/sdk/src/chain.ts';
import { checkpointEventBody } from '../domain/webhooks.ts';
import {
  chainsToPublish,
  checkpointOf,
  findChainHead,
  insertPublishedCheckpoint,
  listPublishedCheckpoints,
  lockChainHead,
  newestPublishedCheckpoint,
} from '../store/evidence.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { ChainFrozenError } from './errors.ts';
import { evidenceEventStatements } from './evidence-events.ts';
import { walkEntries } from './verify-chain.ts';

export const CHECKPOINT_INTERVAL_MS = 60_000;
const BATCH = 100;

export interface PublishOutcome {
  published: number;
  /** Workspaces whose chain failed the check: nothing was published for them. */
  refused: { workspaceId: string; seq: number; reason: string }[];
}

export async function publishCheckpoints(ctx: ServiceContext): Promise<PublishOutcome> {
  const outcome: PublishOutcome = { published: 0, refused: [] };
  for (let after = ''; ;) {
    const due = await chainsToPublish(ctx.db, ctx.now() - CHECKPOINT_INTERVAL_MS + 1, after, BATCH);
    for (const { workspaceId } of due) {
      const checked = await checkSinceLastPublished(ctx, workspaceId);
      if ('reason' in checked) outcome.refused.push({ workspaceId, ...checked });
      else {
        const done = await publish(ctx, workspaceId, checked);
        if (done === 'frozen') outcome.refused.push({ workspaceId, seq: checked.seq, reason: 'frozen' });
        else if (done) outcome.published += 1;
      }
    }
    if (due.length < BATCH) return outcome;
    after = due.at(-1)!.workspaceId;
  }
}

/** The head's checkpoint, once the entries after the last published one link up to it. */
async function checkSinceLastPublished(
  ctx: ServiceContext,
  workspaceId: string,
): Promise<Checkpoint | { seq: number; reason: string }> {
  const last = await newestPublishedCheckpoint(ctx.db, workspaceId);
  const head = checkpointOf(await findChainHead(ctx.db, workspaceId));
  if (!head) return { seq: (last?.seq ?? 0) + 1, reason: 'checkpoint_missing' };
  if (!(await ctx.signer.trusts(workspaceId, head))) return { seq: head.seq, reason: 'checkpoint_invalid' };
  const walk = new ChainWalk(last ? { seq: last.seq, hash: last.hash } : null, [head]);
  await walkEntries(ctx.db, workspaceId, walk, (last?.seq ?? 0) + 1, head.seq);
  walk.finish(head.seq);
  return walk.firstInvalid ?? head;
}

/**
 * Under the chain's lock, so that two instances never publish twice in one minute; and only a head the
 * signer would extend (chain-guard.ts, in full: a chain frozen by any instance is never published).
 */
async function publish(
  ctx: ServiceContext,
  workspaceId: string,
  checkpoint: Checkpoint,
): Promise<boolean | 'frozen'> {
  return ctx.db.transaction(async (tx) => {
    const head = await lockChainHead(tx, workspaceId);
    if (!head) return false;
    try {
      await ctx.chainGuard.check(tx, ctx, workspaceId, head, true);
    } catch (error) {
      if (error instanceof ChainFrozenError) return 'frozen';
      throw error;
    }
    const now = ctx.now();
    const last = await newestPublishedCheckpoint(tx, workspaceId);
    if (last && (last.seq >= checkpoint.seq || last.published_at > now - CHECKPOINT_INTERVAL_MS))
      return false;
    await insertPublishedCheckpoint(tx, workspaceId, { ...checkpoint, published_at: now });
    const body = checkpointEventBody(workspaceId, checkpoint, now);
    await writeTogether(tx, ctx.db.dialect, await evidenceEventStatements(tx, workspaceId, body, now));
    return true;
  });
}

/** The published checkpoints of a workspace, oldest first, from `since` (a seq or a time). */
export async function listCheckpoints(
  ctx: ServiceContext,
  workspaceId: string,
  query: { since?: { afterSeq: number } | { sinceMs: number }; limit: number },
) {
  const rows = await listPublishedCheckpoints(
    ctx.db,
    workspaceId,
    query.since ?? { afterSeq: 0 },
    query.limit + 1,
  );
  return {
    orgId: workspaceId,
    checkpoints: rows.slice(0, query.limit).map(({ published_at, ...checkpoint }) => ({
      ...checkpoint,
      published_at: new Date(published_at).toISOString(),
    })),
    has_more: rows.length > query.limit,
  };
}

/** The newest published checkpoint of a workspace, if any. */
export const newestCheckpoint = async (ctx: ServiceContext, workspaceId: string) =>
  (await newestPublishedCheckpoint(ctx.db, workspaceId)) ?? null;
