/**
 * Walks a workspace's hash chain, checks every link and hash, and compares the chain with its signed
 * checkpoints: the head's, the newest published one, and one the caller kept (`against`).
 *
 * A whole-chain check goes on from the end of the last one this process found intact (its last entry
 * must still hold its hash; otherwise the whole chain is walked again), so a long chain is not re-hashed
 * on every call; checks of one workspace that come while one runs share it, and the walk yields to the
 * event loop every MiB hashed, so other workspaces are not kept waiting. A range, or a checkpoint
 * kept (`against`), is always walked in full, as the command does (a process of its own).
 */
import {
  ChainWalk,
  type Checkpoint,
  hashInputsOf,
  type InvalidReason,
  type Pin,
} from '../../packages/sdk/src/chain.ts';
import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  checkpointOf,
  entryHashAt,
  recordedFreeze,
  type ChainRow,
  chainRows,
  findChainHead,
  lastEntrySeq,
  listEntries,
  newestPublishedCheckpoint,
} from '../store/evidence.ts';
import type { Sql } from '../store/db.ts';
import type { ServiceContext } from './context.ts';
import { sha256Hex } from './hashing.ts';

// A page is read in one go, and entries may be large (a hold's arguments up to 1 MB): the first page is
// small, and the next ones hold about PAGE_BYTES, at most PAGE entries.
const FIRST_PAGE = 32;
const PAGE = 1000;
const PAGE_BYTES = 4 << 20;
const YIELD_EVERY_BYTES = 1 << 20;

/** A chain's start this process found intact: up to `seq`, whose hash was `hash`, `checked` entries. */
interface VerifiedPrefix {
  seq: number;
  hash: string;
  checked: number;
}
const verifiedPrefixes = new WeakMap<ServiceContext['db'], Map<string, VerifiedPrefix>>();
const running = new WeakMap<ServiceContext['db'], Map<string, Promise<VerifyResult>>>();

const perDb = <T>(store: WeakMap<ServiceContext['db'], Map<string, T>>, ctx: ServiceContext) => {
  let map = store.get(ctx.db);
  if (!map) store.set(ctx.db, (map = new Map()));
  return map;
};

export interface VerifyResult {
  valid: boolean;
  checked: number;
  head: { seq: number; hash: string } | null;
  first_invalid: { seq: number; reason: InvalidReason } | null;
  checkpoint: Checkpoint | null;
  verified_at: string;
}

export function verifyChain(
  ctx: ServiceContext,
  workspaceId: string,
  range: { fromSeq?: number; toSeq?: number } = {},
  /** A checkpoint kept from earlier: the chain must still hold its seq with its hash (`rewritten`). */
  against?: Checkpoint,
): Promise<VerifyResult> {
  const whole = (range.fromSeq ?? 1) === 1 && range.toSeq === undefined && !against;
  if (!whole) return walkChain(ctx, workspaceId, range, against, null);
  const inFlight = perDb(running, ctx);
  const started = inFlight.get(workspaceId);
  if (started) return started;
  const run = walkChain(ctx, workspaceId, {}, undefined, perDb(verifiedPrefixes, ctx)).finally(() =>
    inFlight.delete(workspaceId),
  );
  inFlight.set(workspaceId, run);
  return run;
}

async function walkChain(
  ctx: ServiceContext,
  workspaceId: string,
  range: { fromSeq?: number; toSeq?: number },
  against: Checkpoint | undefined,
  /** For a whole-chain check: where the last intact one ended, kept for the next. */
  prefixes: Map<string, VerifiedPrefix> | null,
): Promise<VerifyResult> {
  const stored = await findChainHead(ctx.db, workspaceId);
  const checkpoint = checkpointOf(stored);
  const published = (await newestPublishedCheckpoint(ctx.db, workspaceId)) ?? null;
  const signed = [checkpoint, published].filter((cp): cp is Checkpoint => cp !== null);
  const pins: Pin[] = [...signed];
  if (against) pins.push({ seq: against.seq, hash: against.hash, reason: 'rewritten' });
  // The walk ends at the head, or at a checkpoint past it (a head moved back shows as truncated).
  const end = Math.max(stored?.seq ?? 0, ...pins.map((pin) => pin.seq));
  const to = Math.min(range.toSeq ?? Number.MAX_SAFE_INTEGER, end);
  const prefix = await stillHeld(ctx, workspaceId, prefixes?.get(workspaceId), pins, end);
  const from = prefix ? prefix.seq + 1 : (range.fromSeq ?? 1);

  const [previous] =
    from > 1 && !prefix ? await listEntries(ctx.db, workspaceId, workspaceId, from - 1, from - 1, 1) : [];
  const walk = new ChainWalk(prefix ?? (previous ? { seq: previous.seq, hash: previous.hash } : null), pins);
  walk.checked = prefix?.checked ?? 0;
  if (from > 1 && !prefix && !previous && from - 1 <= end) walk.fail(from - 1, 'sequence_gap');
  // A checkpoint no trusted key signed was written by someone else: the head it pins is forged.
  for (const cp of signed)
    if (!(await ctx.signer.trusts(workspaceId, cp))) walk.fail(cp.seq, 'checkpoint_invalid');
  if (against && !(await ctx.signer.trusts(workspaceId, against)))
    walk.fail(against.seq, 'checkpoint_invalid');

  // A range that starts past the end has nothing to check.
  if (from > to && !prefix) return result(ctx, walk, checkpoint);
  await walkEntries(ctx.db, workspaceId, walk, from, to);
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
  if (prefixes) {
    if (walk.firstInvalid === null && walk.head)
      prefixes.set(workspaceId, { ...walk.head, checked: walk.checked });
    else prefixes.delete(workspaceId);
  }
  // A break the signer found that the walk cannot see (a head moved back behind what an instance had
  // signed, the published checkpoints deleted too): the chain is frozen, and not intact.
  const frozen = ctx.chainGuard.frozenAt(workspaceId) ?? (await recordedFreeze(ctx.db, workspaceId));
  if (frozen) walk.fail(frozen.seq, frozen.reason);
  return result(ctx, walk, checkpoint);
}

/**
 * Pushes the entries `from`..`to` onto `walk`, each with its hash recomputed, until one fails. The
 * stored data is hashed as stored: text that is not the canonical form does not verify. Each page is
 * asked for before the one before it is hashed, so the database reads it meanwhile (PostgreSQL).
 */
export async function walkEntries(sql: Sql, workspaceId: string, walk: ChainWalk, from: number, to: number) {
  const read = (next: number, limit: number) => {
    const rows = chainRows(sql, workspaceId, next, to, limit);
    // A page read ahead is not awaited when the walk fails before it: its error must not end the process.
    rows.catch(() => undefined);
    return { rows, limit };
  };
  const hashInput = hashInputsOf(workspaceId);
  let hashed = 0;
  for (let ahead = from <= to ? read(from, FIRST_PAGE) : null; ahead && !walk.firstInvalid;) {
    const page = await ahead.rows;
    const last = page.at(-1);
    ahead =
      last && page.length === ahead.limit && Number(last[0]) < to
        ? read(Number(last[0]) + 1, nextLimit(page))
        : null;
    for (const [storedSeq, prev_hash, type, occurred_at, stored, hash] of page) {
      const seq = Number(storedSeq);
      // Text, unless a database writer stored another type (SQLite keeps it): hashed as its text, as before.
      const data = String(stored);
      const input = hashInput(seq, prev_hash, type, occurred_at, data);
      if (!walk.push({ seq, prev_hash, hash }, sha256Hex(input))) break;
      hashed += data.length;
      if (hashed >= YIELD_EVERY_BYTES) {
        hashed = 0;
        await nextTurn();
      }
    }
  }
}

/** The next page's size: about PAGE_BYTES of data at this page's size of entry, at most PAGE entries. */
function nextLimit(page: ChainRow[]): number {
  let bytes = 0;
  for (const row of page) bytes += String(row[4]).length;
  return Math.max(1, Math.min(PAGE, Math.floor((PAGE_BYTES * page.length) / Math.max(bytes, 1))));
}

/**
 * The intact start found by an earlier check, if the chain still holds it: its last entry with the
 * same hash, and each signed checkpoint at or before it with its hash (a checkpoint past it is
 * checked by the walk). Otherwise none: the whole chain is walked again.
 */
async function stillHeld(
  ctx: ServiceContext,
  workspaceId: string,
  prefix: VerifiedPrefix | undefined,
  pins: Pin[],
  end: number,
): Promise<VerifiedPrefix | null> {
  if (!prefix || prefix.seq > end) return null;
  for (const { seq, hash } of [prefix, ...pins.filter((pin) => pin.seq <= prefix.seq)])
    if ((await entryHashAt(ctx.db, workspaceId, seq)) !== hash) return null;
  return prefix;
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
