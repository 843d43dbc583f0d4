/** Appending to a workspace's hash chain, inside the caller's transaction. */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { checkpointInput, type EvidenceEntry, entryHashInputWithData } from '../../packages/sdk/src/chain.ts';
import type { Sql } from '../store/db.ts';
import { appendEntriesStatements, lockChainHead, type StoredEntry } from '../store/evidence.ts';
import { type Statement, writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { sha256Hex } from './hashing.ts';

export interface Chain {
  append(type: string, data: Record<string, unknown>): Promise<EvidenceEntry>;
}

/**
 * Entries made in memory after a locked head: `append` computes each (its hash links it to the one
 * before), `writes()` gives the statements that store them and move the head, signed once for the
 * last entry. The caller sends them in its transaction, with whatever else it writes.
 */
export function chainAfter(ctx: ServiceContext, workspaceId: string, head: { seq: number; hash: string }) {
  let { seq, hash } = head;
  let pending: StoredEntry[] = [];
  return {
    append(type: string, data: Record<string, unknown>): EvidenceEntry {
      const unhashed = {
        seq: seq + 1,
        prev_hash: hash,
        orgId: workspaceId,
        type,
        occurred_at: new Date(ctx.now()).toISOString(),
      };
      // The canonical text is made once: the hash covers it and the row stores it.
      const text = canonicalJson(data);
      const entry = { ...unhashed, hash: sha256Hex(entryHashInputWithData(unhashed, text)) };
      pending.push({ ...entry, data: text });
      seq = entry.seq;
      hash = entry.hash;
      return { ...entry, data };
    },
    /** The statements for the entries appended since the last call (none: nothing to write). */
    writes(): Statement[] {
      const last = pending.at(-1);
      if (!last) return [];
      const entries = pending;
      pending = [];
      const checkpoint = {
        orgId: workspaceId,
        seq: last.seq,
        hash: last.hash,
        signed_at: last.occurred_at,
        key_id: ctx.signer.keyId,
      };
      return appendEntriesStatements(workspaceId, entries, {
        seq: last.seq,
        hash: last.hash,
        signedAt: last.occurred_at,
        keyId: ctx.signer.keyId,
        signature: ctx.signer.sign(checkpointInput(checkpoint)),
      });
    },
  };
}

/**
 * Locks the workspace's chain head for the rest of the transaction (appends, and everything else the
 * transaction does, are serialized per workspace, so the chain has no gap and no fork) and answers
 * a chain kept in memory: the caller writes it (`writes()`), with the head signed once.
 */
export async function lockChain(tx: Sql, ctx: ServiceContext, workspaceId: string) {
  const head = await lockChainHead(tx, workspaceId);
  if (!head) throw new Error('workspace has no evidence chain');
  return chainAfter(ctx, workspaceId, head);
}

/** As `lockChain`, but each append is stored at once. */
export async function openChain(tx: Sql, ctx: ServiceContext, workspaceId: string): Promise<Chain> {
  const chain = await lockChain(tx, ctx, workspaceId);
  return {
    async append(type, data) {
      const entry = chain.append(type, data);
      await writeTogether(tx, ctx.db.dialect, chain.writes());
      return entry;
    },
  };
}
