/** Appending to a workspace's hash chain, inside the caller's transaction. */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { checkpointInput, type EvidenceEntry, entryHashInputWithData } from '../../packages/sdk/src/chain.ts';
import { type Sql, UniqueViolationError } from '../store/db.ts';
import {
  appendEntriesStatements,
  lockChainHead,
  type StoredEntry,
  unfreezeChain,
} from '../store/evidence.ts';
import { type Statement, writeTogether } from '../store/statements.ts';
import { REANCHORED, reanchoredAlert } from './chain-guard.ts';
import type { Hold } from '../domain/hold.ts';
import type { ServiceContext } from './context.ts';
import { ServiceError } from './errors.ts';
import { sha256Hex } from './hashing.ts';

export interface Chain {
  append(type: string, data: Record<string, unknown>): Promise<EvidenceEntry>;
}

/**
 * Entries made in memory after a locked head: `append` computes each (its hash links it to the one
 * before), `writes()` gives the statements that store them and move the head, signed once for the
 * last entry. The caller sends them in its transaction, with whatever else it writes. The head is
 * checked first (services/chain-guard.ts): a chain that fails is frozen and `evidence_frozen` thrown.
 *
 * The allowed calls' results waiting to be recorded for the workspace come first (record-execution.ts):
 * they are written with this transaction's own entries, under the same commit and signed head.
 */
export async function chainAfter(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  head: { seq: number; hash: string },
) {
  await ctx.chainGuard.check(tx, ctx, workspaceId, head);
  const chain = chainFrom(tx, ctx, workspaceId, head);
  await ctx.executions.storeWaiting(tx, ctx, workspaceId, chain);
  return chain;
}

/** An in-memory chain's entries and the writes that go with them. */
export type ChainInMemory = ReturnType<typeof chainFrom>;

/** As `chainAfter`, without the check: for the re-anchor alone, which appends after a head that failed it. */
function chainFrom(tx: Sql, ctx: ServiceContext, workspaceId: string, head: { seq: number; hash: string }) {
  let { seq, hash } = head;
  let pending: StoredEntry[] = [];
  /** Statements written with the next entries, and what is told once they commit. */
  let carried: Statement[] = [];
  const onCommit: (() => void)[] = [];
  /** The holds whose state the carried statements write, as they will be. */
  const carriedHolds = new Map<string, Hold>();
  return {
    /**
     * Has `statements` (the state of `holds`, which goes with entries appended) sent with the next
     * `writes()`, and `committed` run once their transaction commits. A transaction that never writes
     * sends neither.
     */
    carry(statements: Statement[], holds: Hold[], committed: () => void) {
      carried.push(...statements);
      for (const hold of holds) carriedHolds.set(hold.id, hold);
      onCommit.push(committed);
    },
    /** A hold whose new state this transaction carries: a read of it in the transaction is not yet it. */
    carriedHold(holdId: string): Hold | undefined {
      return carriedHolds.get(holdId);
    },
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
      const states = carried;
      pending = [];
      carried = [];
      for (const then of onCommit.splice(0)) tx.afterCommit(then);
      const checkpoint = {
        orgId: workspaceId,
        seq: last.seq,
        hash: last.hash,
        signed_at: last.occurred_at,
        key_id: ctx.signer.keyId,
      };
      ctx.chainGuard.signed(tx, workspaceId, { seq: last.seq, hash: last.hash, signedAt: last.occurred_at });
      return [
        ...states,
        ...appendEntriesStatements(workspaceId, entries, {
          seq: last.seq,
          hash: last.hash,
          signedAt: last.occurred_at,
          keyId: ctx.signer.keyId,
          signature: ctx.signer.sign(checkpointInput(checkpoint)),
        }),
      ];
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
  return chainAfter(tx, ctx, workspaceId, head);
}

/** As `lockChain`, but each append is stored at once. */
export async function openChain(tx: Sql, ctx: ServiceContext, workspaceId: string): Promise<Chain> {
  const chain = await lockChain(tx, ctx, workspaceId);
  return {
    async append(type, data) {
      const entry = chain.append(type, data);
      try {
        await writeTogether(tx, ctx.db.dialect, chain.writes());
      } catch (error) {
        // Only the entry can conflict here: someone stored one past the head without moving it.
        if (error instanceof UniqueViolationError) ctx.chainGuard.recheck(ctx, workspaceId);
        throw error;
      }
      return entry;
    },
  };
}

/**
 * The operator's way on after a break (`approvals evidence reanchor`): an entry that names the break,
 * the reason given and the head as it was stored, appended after that head and signed; the chain is
 * no longer frozen. Refused for a chain that is intact.
 */
export async function reanchorChain(ctx: ServiceContext, workspaceId: string, reason: string) {
  return ctx.db.transaction(async (tx) => {
    const head = await lockChainHead(tx, workspaceId);
    if (!head) throw new Error('workspace has no evidence chain');
    const { found, recorded, last } = await ctx.chainGuard.breakToReanchor(tx, ctx, workspaceId);
    if (!found && !recorded)
      throw new ServiceError('conflict', 'the evidence chain is intact: there is nothing to re-anchor');
    // After the last entry stored, so that entries someone stored past the head are kept, under a
    // signature that names the break, and the chain has no gap.
    const chain = chainFrom(tx, ctx, workspaceId, last);
    const entry = chain.append(REANCHORED, {
      reason,
      // What this command's own check found (null: nothing it can see, as when only another instance
      // could tell), and apart from it what the database says an instance recorded: a database writer
      // could have written that.
      break: found,
      recorded_break: recorded,
      stored_head: { seq: head.seq, hash: head.hash },
      appended_after: last,
    });
    // On its own: writes sent together must not change one row twice (the head's).
    await unfreezeChain(tx, workspaceId);
    await writeTogether(tx, ctx.db.dialect, [
      ...chain.writes(),
      ...(await reanchoredAlert(tx, ctx, workspaceId, (found ?? recorded)!)),
    ]);
    return { break: found, recorded_break: recorded, entry: { seq: entry.seq, hash: entry.hash } };
  });
}
