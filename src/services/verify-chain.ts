/**
 * Walks a workspace's hash chain, checks every link and hash, and compares the chain with its signed
 * checkpoints: the head's, the newest published one, and one the caller kept (`against`).
 */
import {
  ChainWalk,
  type Checkpoint,
  entryHashInputWithData,
  type InvalidReason,
  type Pin,
} from '../../packages/sdk/src/chain.ts';
import {
  checkpointOf,
  findChainHead,
  lastEntrySeq,
  listEntries,
  newestPublishedCheckpoint,
} from '../store/evidence.ts';
import type { ServiceContext } from './context.ts';
import { sha256Hex } from './hashing.ts';

const PAGE = 1000;

export interface VerifyResult {
  valid: boolean;
  checked: number;
  head: { seq: number; hash: string } | null;
  first_invalid: { seq: number; reason: InvalidReason } | null;
  checkpoint: Checkpoint | null;
  verified_at: string;
}

export async function verifyChain(
  ctx: ServiceContext,
  workspaceId: string,
  range: { fromSeq?: number; toSeq?: number } = {},
  /** A checkpoint kept from earlier: the chain must still hold its seq with its hash (`rewritten`). */
  against?: Checkpoint,
): Promise<VerifyResult> {
  const stored = await findChainHead(ctx.db, workspaceId);
  const checkpoint = checkpointOf(stored);
  const published = (await newestPublishedCheckpoint(ctx.db, workspaceId)) ?? null;
  const signed = [checkpoint, published].filter((cp): cp is Checkpoint => cp !== null);
  const pins: Pin[] = [...signed];
  if (against) pins.push({ seq: against.seq, hash: against.hash, reason: 'rewritten' });
  const from = range.fromSeq ?? 1;
  // The walk ends at the head, or at a checkpoint past it (a head moved back shows as truncated).
  const end = Math.max(stored?.seq ?? 0, ...pins.map((pin) => pin.seq));
  const to = Math.min(range.toSeq ?? Number.MAX_SAFE_INTEGER, end);

  const [previous] =
    from > 1 ? await listEntries(ctx.db, workspaceId, workspaceId, from - 1, from - 1, 1) : [];
  const walk = new ChainWalk(previous ? { seq: previous.seq, hash: previous.hash } : null, pins);
  if (from > 1 && !previous && from - 1 <= end) walk.fail(from - 1, 'sequence_gap');
  // A checkpoint no trusted key signed was written by someone else: the head it pins is forged.
  for (const cp of signed)
    if (!(await ctx.signer.trusts(workspaceId, cp))) walk.fail(cp.seq, 'checkpoint_invalid');
  if (against && !(await ctx.signer.trusts(workspaceId, against)))
    walk.fail(against.seq, 'checkpoint_invalid');

  // A range that starts past the end has nothing to check.
  if (from > to) return result(ctx, walk, checkpoint);
  for (let next = from; !walk.firstInvalid && next <= to;) {
    const page = await listEntries(ctx.db, workspaceId, workspaceId, next, to, PAGE);
    // The stored data is hashed as stored: text that is not the canonical form does not verify.
    for (const entry of page)
      if (!walk.push(entry, sha256Hex(entryHashInputWithData(entry, entry.data)))) break;
    if (page.length < PAGE) break;
    next = page[page.length - 1]!.seq + 1;
  }
  walk.finish(to);
  if (to === end) {
    // Up to the end, every entry must be covered by a trusted checkpoint.
    walk.requireCoverage(Math.max(0, ...signed.map((cp) => cp.seq)));
    // Entries past the head were not written by us. The head is read after the last entry: an append
    // that commits in between moves both, so it is not mistaken for one.
    const last = await lastEntrySeq(ctx.db, workspaceId);
    const head = Math.max((await findChainHead(ctx.db, workspaceId))?.seq ?? 0, end);
    if (last > head) walk.fail(head + 1, 'checkpoint_missing');
  }
  return result(ctx, walk, checkpoint);
}

function result(ctx: ServiceContext, walk: ChainWalk, checkpoint: Checkpoint | null): VerifyResult {
  return {
    valid: walk.firstInvalid === null,
    checked: walk.checked,
    head: walk.head,
    first_invalid: walk.firstInvalid,
    checkpoint,
    verified_at: new Date(ctx.now()).toISOString(),
  };
}
