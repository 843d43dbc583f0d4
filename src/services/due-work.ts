/**
 * One sweep over stored work that comes due (follow-ups, handovers), for the deadline worker. Each
 * item is done on its own: one that fails is postponed with the shared backoff and holds up no other.
 */
import { type Backoff, backoffDelay } from '../domain/backoff.ts';
import type { ServiceContext } from './context.ts';

/** A failed item waits 5 minutes, then twice as long after each failure in a row, up to an hour. */
const DUE_WORK_RETRIES: Backoff = { firstMs: 5 * 60_000, longestMs: 60 * 60_000 };

/** A kind of due work: where its items are stored, and how one is done. */
export interface DueWork<Item extends { failures: number }> {
  /** Up to `limit` items due at `now`, most overdue first, with their failures in a row. */
  listDue(ctx: ServiceContext, now: number, limit: number): Promise<Item[]>;
  run(ctx: ServiceContext, item: Item): Promise<void>;
  /** Stores the item's failures in a row and, after a failure, when it is tried again (else null). */
  recordFailures(ctx: ServiceContext, item: Item, failures: number, retryAt: number | null): Promise<void>;
}

/**
 * The sweep of one kind of due work: acts on up to `batch` items that came due and returns how many it
 * looked at; the first failure is thrown at the end, for the worker's log. The failures in a row are
 * stored with each item, so the waits go on across restarts and instances.
 */
export function dueWorkSweep<Item extends { failures: number }>(work: DueWork<Item>) {
  return async (ctx: ServiceContext, batch: number): Promise<number> => {
    const due = await work.listDue(ctx, ctx.now(), batch);
    let failure: unknown = null;
    for (const item of due) {
      try {
        await work.run(ctx, item);
        if (item.failures > 0) await work.recordFailures(ctx, item, 0, null);
      } catch (error) {
        failure ??= error;
        const failures = item.failures + 1;
        await work.recordFailures(ctx, item, failures, ctx.now() + backoffDelay(DUE_WORK_RETRIES, failures));
      }
    }
    if (failure) throw failure;
    return due.length;
  };
}
