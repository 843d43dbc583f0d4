/**
 * One sweep over stored work that comes due (follow-ups, handovers), for the deadline worker. Each
 * item is done on its own: one that fails is postponed with the shared backoff and holds up no other.
 */
import { type Backoff, backoffDelay } from '../domain/backoff.ts';
import type { ServiceContext } from './context.ts';

/** A failed item waits 5 minutes, then twice as long after each failure in a row, up to an hour. */
const DUE_WORK_RETRIES: Backoff = { firstMs: 5 * 60_000, longestMs: 60 * 60_000 };

/** A kind of due work: where its items are stored, and how one is done. */
export interface DueWork<Item> {
  /** Up to `limit` items due at `now`, most overdue first. */
  listDue(ctx: ServiceContext, now: number, limit: number): Promise<Item[]>;
  /** What names an item across sweeps. */
  keyOf(item: Item): string;
  run(ctx: ServiceContext, item: Item): Promise<void>;
  /** Stores that the item is not due before `until`. */
  postpone(ctx: ServiceContext, item: Item, until: number): Promise<void>;
}

/**
 * The sweep of one kind of due work: acts on up to `batch` items that came due and returns how many it
 * looked at; the first failure is thrown at the end, for the worker's log. Failures in a row are
 * counted by this sweep (a restarted service begins again at the first wait).
 */
export function dueWorkSweep<Item>(work: DueWork<Item>) {
  const failures = new Map<string, number>();
  return async (ctx: ServiceContext, batch: number): Promise<number> => {
    const due = await work.listDue(ctx, ctx.now(), batch);
    let failure: unknown = null;
    for (const item of due) {
      const key = work.keyOf(item);
      try {
        await work.run(ctx, item);
        failures.delete(key);
      } catch (error) {
        failure ??= error;
        const count = (failures.get(key) ?? 0) + 1;
        failures.set(key, count);
        await work.postpone(ctx, item, ctx.now() + backoffDelay(DUE_WORK_RETRIES, count));
      }
    }
    if (failure) throw failure;
    return due.length;
  };
}
