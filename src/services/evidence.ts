/** Appending to a workspace's hash chain, inside the caller's transaction. */
import { checkpointInput, type EvidenceEntry, entryHashInput } from '../../packages/sdk/src/chain.ts';
import type { Sql } from '../store/db.ts';
import { appendEntry, lockChainHead } from '../store/evidence.ts';
import type { ServiceContext } from './context.ts';
import { sha256Hex } from './hashing.ts';

export interface Chain {
  append(type: string, data: Record<string, unknown>): Promise<EvidenceEntry>;
}

/**
 * Locks the workspace's chain head for the rest of the transaction: appends (and everything else
 * the transaction does) are serialized per workspace, so the chain has no gap and no fork.
 */
export async function openChain(tx: Sql, ctx: ServiceContext, workspaceId: string): Promise<Chain> {
  const head = await lockChainHead(tx, workspaceId);
  if (!head) throw new Error('workspace has no evidence chain');
  let { seq, hash } = head;
  return {
    async append(type, data) {
      const occurredAt = new Date(ctx.now()).toISOString();
      const unsigned = {
        seq: seq + 1,
        prev_hash: hash,
        orgId: workspaceId,
        type,
        occurred_at: occurredAt,
        data,
      };
      const entry: EvidenceEntry = { ...unsigned, hash: sha256Hex(entryHashInput(unsigned)) };
      const checkpoint = {
        orgId: workspaceId,
        seq: entry.seq,
        hash: entry.hash,
        signed_at: occurredAt,
        key_id: ctx.signer.keyId,
      };
      await appendEntry(tx, workspaceId, entry, {
        seq: entry.seq,
        hash: entry.hash,
        signedAt: occurredAt,
        keyId: ctx.signer.keyId,
        signature: ctx.signer.sign(checkpointInput(checkpoint)),
      });
      seq = entry.seq;
      hash = entry.hash;
      return entry;
    },
  };
}
