/** Walks a workspace's hash chain and checks every link, hash and the signed checkpoint. */
import { ChainWalk, type Checkpoint, entryHashInputWithData } from '../../packages/sdk/src/chain.ts';
import { checkpointOf, findChainHead, listEntries } from '../store/evidence.ts';
import { checkpointSignedByUs } from './audit-signer.ts';
import type { ServiceContext } from './context.ts';
import { sha256Hex } from './hashing.ts';

const PAGE = 1000;

export interface VerifyResult {
  valid: boolean;
  checked: number;
  head: { seq: number; hash: string } | null;
  first_invalid: { seq: number; reason: 'hash_mismatch' | 'broken_link' | 'sequence_gap' } | null;
  checkpoint: Checkpoint | null;
  verified_at: string;
}

export async function verifyChain(
  ctx: ServiceContext,
  workspaceId: string,
  range: { fromSeq?: number; toSeq?: number } = {},
): Promise<VerifyResult> {
  const stored = await findChainHead(ctx.db, workspaceId);
  const checkpoint = checkpointOf(stored);
  const from = range.fromSeq ?? 1;
  const to = range.toSeq ?? Number.MAX_SAFE_INTEGER;

  const [previous] =
    from > 1 ? await listEntries(ctx.db, workspaceId, workspaceId, from - 1, from - 1, 1) : [];
  const walk = new ChainWalk(previous ? { seq: previous.seq, hash: previous.hash } : null, checkpoint);
  // A range that starts past the end has nothing to check; one that starts inside must link up.
  const end = Math.max(stored?.seq ?? 0, checkpoint?.seq ?? 0);
  if (from > 1 && !previous && from - 1 <= end) {
    walk.firstInvalid = { seq: from - 1, reason: 'sequence_gap' };
  } else if (checkpoint && !(await checkpointSignedByUs(ctx.db, { orgId: workspaceId, ...checkpoint }))) {
    // A checkpoint none of our keys signed was written by someone else: the head it pins is forged.
    walk.firstInvalid = { seq: checkpoint.seq, reason: 'hash_mismatch' };
  }
  for (let next = from; !walk.firstInvalid && next <= to;) {
    const page = await listEntries(ctx.db, workspaceId, workspaceId, next, to, PAGE);
    // The stored data is hashed as stored: text that is not the canonical form does not verify.
    for (const entry of page)
      if (!walk.push(entry, sha256Hex(entryHashInputWithData(entry, entry.data)))) break;
    if (page.length < PAGE) break;
    next = page[page.length - 1]!.seq + 1;
  }
  walk.finish(to);
  return {
    valid: walk.firstInvalid === null,
    checked: walk.checked,
    head: walk.head,
    first_invalid: walk.firstInvalid,
    checkpoint,
    verified_at: new Date(ctx.now()).toISOString(),
  };
}
