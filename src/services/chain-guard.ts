/**
 * The signer extends only what it verified (decisions.md, Amendments 2026-11-29; the C2SP
 * tlog-witness rule). Before a chain is extended, its stored head must be the head this instance last
 * signed or checked, or else: carry a valid signature by a trusted key over the last entry's hash, and
 * not go back behind (nor away from) the newest head this instance signed or saw, nor the newest
 * published checkpoint. A chain that fails is frozen for every instance: its writes are refused
 * (`evidence_frozen`) until an operator re-anchors it with an entry that names the break. Nothing is
 * re-signed silently.
 *
 * The newest heads are kept in the process and, with AUDIT_STATE_DIR, in a file there across restarts
 * (written at most once a second, and at stop): a database writer cannot reach it.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { entryHashInputWithData } from '../../packages/sdk/src/chain.ts';
import { alertEventBody } from '../domain/webhooks.ts';
import type { Sql } from '../store/db.ts';
import {
  checkpointOf,
  entryHashAt,
  freezeChain,
  frozenChains,
  type HeadUnderCheck,
  headUnderCheck,
  listEntries,
  lockChainHead,
  newestEntryOfType,
} from '../store/evidence.ts';
import { type Statement, writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { ChainFrozenError } from './errors.ts';
import { sha256Hex } from './hashing.ts';
import { evidenceEventStatements } from './evidence-events.ts';

export type BreakReason = 'checkpoint_missing' | 'checkpoint_invalid' | 'truncated' | 'rewritten';
export interface ChainBreak {
  seq: number;
  reason: BreakReason;
}

/** A head this instance signed or checked: `signedAt` is its last entry's time. */
interface KnownHead {
  seq: number;
  hash: string;
  signedAt: string;
}

export const REANCHORED = 'evidence.reanchored';
const STATE_FILE = 'evidence-heads.json';
const FLUSH_MS = 1000;
/**
 * Even a head this instance knows is read in full at least this often per workspace that writes: a
 * freeze another instance recorded, or an entry stored past the head, stops this one within it too.
 */
export const FULL_CHECK_EVERY_MS = 5000;
const PAGE = 1000;

export class ChainGuard {
  /** The newest head this instance signed or checked, committed. */
  readonly #known = new Map<string, KnownHead>();
  /**
   * The last head this instance signed, committed or not: a transaction batched after the one that
   * signed it reads it before that commit, and may extend it unchecked (it is this instance's own).
   */
  readonly #lastSigned = new Map<string, { seq: number; hash: string }>();
  readonly #frozen = new Map<string, ChainBreak>();
  /** When each workspace's head was last read in full (ctx.now()). */
  readonly #checkedAt = new Map<string, number>();
  readonly #file: string | null;
  #flushTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(stateDir: string | null) {
    this.#file = stateDir ? join(stateDir, STATE_FILE) : null;
    if (!stateDir) return;
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    let text: string;
    try {
      text = readFileSync(this.#file!, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw error;
    }
    for (const [workspaceId, head] of Object.entries(JSON.parse(text) as Record<string, KnownHead>))
      this.#known.set(workspaceId, head);
  }

  /** The workspaces this instance found broken since it started (and not re-anchored since). */
  get frozen(): string[] {
    return [...this.#frozen.keys()];
  }

  /**
   * Passes when the chain may be extended after `head` (locked by the caller's transaction); otherwise
   * freezes it and throws `evidence_frozen`. The head this instance signed or checked last costs nothing,
   * unless `full` (the checkpoint publisher, once a minute: it also sees a freeze another instance found).
   */
  async check(
    tx: Sql,
    ctx: ServiceContext,
    workspaceId: string,
    head: { seq: number; hash: string },
    full = false,
  ) {
    const known = this.#known.get(workspaceId);
    const own = this.#lastSigned.get(workspaceId);
    const same = (other?: { seq: number; hash: string }) =>
      other?.seq === head.seq && other.hash === head.hash;
    const recent = ctx.now() - (this.#checkedAt.get(workspaceId) ?? -Infinity) < FULL_CHECK_EVERY_MS;
    if (!full && recent && !this.#frozen.has(workspaceId) && (same(known) || same(own))) return;
    const stored = await headUnderCheck(tx, workspaceId);
    if (!stored) throw new Error('workspace has no evidence chain');
    const found = recordedBreak(stored) ?? (await breakOf(tx, ctx, workspaceId, stored, known));
    if (found) {
      this.#frozen.set(workspaceId, found);
      // Recorded by a transaction of its own, once the caller's has been rolled back.
      const lastSeq = stored.lastSeq ?? 0;
      setImmediate(() => void recordFreeze(ctx, workspaceId, found, lastSeq).catch(() => undefined));
      throw new ChainFrozenError();
    }
    this.#frozen.delete(workspaceId);
    this.#checkedAt.set(workspaceId, ctx.now());
    // Committed (another's transaction, or before a re-anchor): the newest head from now on, even where
    // a re-anchor moved it back behind the one known.
    this.#known.set(workspaceId, { seq: stored.seq, hash: stored.hash, signedAt: stored.signedAt ?? '' });
    this.#scheduleFlush();
  }

  /**
   * What an operator re-anchors: the break this process finds now (`found`), and the one the database
   * says an instance recorded (`recorded`: a database writer could have written it, so it is kept apart).
   */
  async breakToReanchor(tx: Sql, ctx: ServiceContext, workspaceId: string) {
    const stored = await headUnderCheck(tx, workspaceId);
    if (!stored) throw new Error('workspace has no evidence chain');
    return {
      found: await breakOf(tx, ctx, workspaceId, stored, this.#known.get(workspaceId)),
      recorded: recordedBreak(stored),
      // The chain goes on from the last entry stored, whatever the head says.
      last:
        stored.lastSeq === null
          ? { seq: 0, hash: stored.hash }
          : { seq: stored.lastSeq, hash: stored.lastHash! },
    };
  }

  /** The break this instance found in a workspace's chain, if it is frozen here. */
  frozenAt(workspaceId: string): ChainBreak | null {
    return this.#frozen.get(workspaceId) ?? null;
  }

  /**
   * A write after `head` failed on an entry already stored past it (someone appended without moving the
   * head): the head is checked in full now, in a transaction of its own, and again at the next write.
   */
  recheck(ctx: ServiceContext, workspaceId: string) {
    this.#known.delete(workspaceId);
    this.#lastSigned.delete(workspaceId);
    setImmediate(() => {
      void ctx.db
        .transaction(async (tx) => {
          const head = await lockChainHead(tx, workspaceId);
          if (head) await this.check(tx, ctx, workspaceId, head);
        })
        .catch(() => undefined);
    });
  }

  /** A head this instance signed: known from the moment its transaction commits. */
  signed(tx: Sql, workspaceId: string, head: KnownHead) {
    this.#lastSigned.set(workspaceId, head);
    tx.afterCommit(() => {
      this.#frozen.delete(workspaceId);
      this.#remember(workspaceId, head);
    });
  }

  /** Writes the state file now (at stop). */
  flush() {
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    if (!this.#file) return;
    const temporary = `${this.#file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(Object.fromEntries(this.#known)), { mode: 0o600 });
    renameSync(temporary, this.#file);
  }

  #remember(workspaceId: string, head: KnownHead) {
    const known = this.#known.get(workspaceId);
    // Commits of one batch may be told out of order: the newest head stays.
    if (known && known.seq > head.seq) return;
    this.#known.set(workspaceId, head);
    this.#scheduleFlush();
  }

  #scheduleFlush() {
    if (!this.#file || this.#flushTimer) return;
    this.#flushTimer = setTimeout(() => this.flush(), FLUSH_MS);
    this.#flushTimer.unref();
  }
}

/** The break an instance recorded when it froze the chain (for every instance), if any. */
const recordedBreak = (stored: HeadUnderCheck): ChainBreak | null =>
  stored.frozenSeq === null
    ? null
    : { seq: stored.frozenSeq, reason: (stored.frozenReason ?? 'checkpoint_invalid') as BreakReason };

/** Why a stored head must not be signed on, found by this process; null when it may. */
async function breakOf(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  stored: HeadUnderCheck,
  known: KnownHead | undefined,
): Promise<ChainBreak | null> {
  const last = stored.lastSeq ?? 0;
  if (last > stored.seq) return { seq: stored.seq + 1, reason: 'checkpoint_missing' };
  if (last < stored.seq) return { seq: last + 1, reason: 'truncated' };
  if (stored.seq > 0) {
    if (stored.lastHash !== stored.hash) return { seq: stored.seq, reason: 'rewritten' };
    const checkpoint = checkpointOf(stored);
    if (!checkpoint) return { seq: stored.seq, reason: 'checkpoint_missing' };
    if (!(await ctx.signer.trusts(workspaceId, checkpoint, tx)))
      return { seq: stored.seq, reason: 'checkpoint_invalid' };
  }
  // The head must hold every head seen before it: this instance's newest, and the newest published.
  for (const seen of [known, stored.published]) {
    if (!seen) continue;
    const moved =
      seen.seq > stored.seq
        ? ({ seq: stored.seq + 1, reason: 'truncated' } as const)
        : seen.seq === 0 || (await entryHashAt(tx, workspaceId, seen.seq)) === seen.hash
          ? null
          : ({ seq: seen.seq, reason: 'rewritten' } as const);
    if (moved && !(await reanchoredSince(tx, workspaceId, seen.signedAt, stored))) return moved;
  }
  return null;
}

/**
 * Whether an operator re-anchored the chain after `since`: a re-anchor entry appended later than the
 * head seen, from which the entries link, hash by hash, up to the stored head (signed by a trusted
 * key, as checked before). Only the holder of the signing key could have made it.
 */
async function reanchoredSince(tx: Sql, workspaceId: string, since: string, stored: HeadUnderCheck) {
  const anchor = await newestEntryOfType(tx, workspaceId, REANCHORED, stored.seq);
  if (!anchor || anchor.occurred_at <= since) return false;
  let previous: string | null = null;
  for (let next = anchor.seq; next <= stored.seq;) {
    const page = await listEntries(tx, workspaceId, workspaceId, next, stored.seq, PAGE);
    for (const entry of page) {
      if (previous !== null && entry.prev_hash !== previous) return false;
      const hash = sha256Hex(entryHashInputWithData(entry, entry.data));
      if (hash !== entry.hash) return false;
      previous = hash;
    }
    if (page.length < PAGE) break;
    next = page.at(-1)!.seq + 1;
  }
  return previous === stored.hash;
}

async function recordFreeze(ctx: ServiceContext, workspaceId: string, found: ChainBreak, lastSeq: number) {
  await ctx.db.transaction(async (tx) => {
    await lockChainHead(tx, workspaceId);
    // An operator's re-anchor appended since the break was found (past the last entry stored then) has
    // dealt with it: a freeze recorded late must not freeze the re-anchored chain again. Any other
    // write since does not stop it. By seq, not by time: instances' clocks differ.
    const anchor = await newestEntryOfType(tx, workspaceId, REANCHORED, Number.MAX_SAFE_INTEGER);
    if (anchor && anchor.seq > lastSeq) return;
    const now = ctx.now();
    // Once for every instance that finds it: the first one marks it and sends the alert.
    if ((await freezeChain(tx, workspaceId, now, found.seq, found.reason)) === 0) return;
    const body = alertEventBody(workspaceId, { state: 'frozen', ...found }, now);
    await writeTogether(tx, ctx.db.dialect, await evidenceEventStatements(tx, workspaceId, body, now));
  });
}

/** The `evidence.alert` of a re-anchor, for the outbox, when the workspace has a webhook. */
export async function reanchoredAlert(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  found: ChainBreak,
): Promise<Statement[]> {
  const now = ctx.now();
  const body = alertEventBody(workspaceId, { state: 'reanchored', ...found }, now);
  return evidenceEventStatements(tx, workspaceId, body, now);
}

/** The slugs of the workspaces whose chain is frozen: in the database, or found so by this instance. */
export async function frozenWorkspaces(ctx: ServiceContext): Promise<string[]> {
  return (await frozenChains(ctx.db, ctx.chainGuard.frozen)).map((row) => row.slug);
}
