/**
 * Fixed-window counters (interface.md, Limits): up to `limit` hits per key per window. Counted in
 * this process (one instance, SQLite) or in the shared database (several instances on PostgreSQL);
 * a counter that fails lets the request through.
 */
import type { ServiceContext } from '../services/context.ts';
import { countRateHit, dropRateWindowsBefore } from '../services/rate-windows.ts';

export interface WindowCount {
  count: number;
  /** Milliseconds until the window ends. */
  resetMs: number;
}

export interface RateCounter {
  /** Adds `by` (1 unless given) to the key's count in the current window and answers the count; 0 reads it. */
  hit(key: string, windowMs: number, now: number, by?: number): Promise<WindowCount>;
}

export class MemoryRateCounter implements RateCounter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastSweep = 0;

  async hit(key: string, windowMs: number, now: number, by = 1): Promise<WindowCount> {
    const start = now - (now % windowMs);
    if (start !== this.lastSweep) this.sweep(start);
    const window = this.windows.get(key);
    const current = window && window.start === start ? window : { start, count: 0 };
    current.count += by;
    if (by > 0) this.windows.set(key, current);
    return { count: current.count, resetMs: start + windowMs - now };
  }

  /** Drops windows that ended, once per window, so memory stays bounded by the active keys. */
  private sweep(start: number) {
    this.lastSweep = start;
    for (const [key, window] of this.windows) if (window.start < start) this.windows.delete(key);
  }
}

/** Counts in the database, so every instance sees the same window. One upsert per hit. */
export class SharedRateCounter implements RateCounter {
  private lastSweep = 0;
  private readonly ctx: ServiceContext;

  constructor(ctx: ServiceContext) {
    this.ctx = ctx;
  }

  async hit(key: string, windowMs: number, now: number, by = 1): Promise<WindowCount> {
    const { start, resetMs } = this.windowAt(windowMs, now);
    return { count: await countRateHit(this.ctx, key, start, by), resetMs };
  }

  /**
   * The window `now` is in, for a hit counted by another statement (the API key's read, guard.ts):
   * its start and the milliseconds until it ends.
   */
  windowAt(windowMs: number, now: number): { start: number; resetMs: number } {
    const start = now - (now % windowMs);
    if (start !== this.lastSweep) {
      this.lastSweep = start;
      // Ended windows go, once per window per instance; a failure here only delays the cleanup.
      void dropRateWindowsBefore(this.ctx, start - windowMs).catch(() => {});
    }
    return { start, resetMs: start + windowMs - now };
  }
}

export interface Limit {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** Whether a window's count is within `limit`, as the RateLimit headers say it. */
export const limitOf = ({ count, resetMs }: WindowCount, limit: number): Limit => ({
  allowed: count <= limit,
  limit,
  remaining: Math.max(0, limit - count),
  resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
});

export async function checkLimit(
  counter: RateCounter,
  key: string,
  limit: number,
  now: number,
  windowMs = 60_000,
): Promise<Limit> {
  try {
    return limitOf(await counter.hit(key, windowMs, now), limit);
  } catch {
    // Counting failed: fail open (interface.md, Limits 6).
    return { allowed: true, limit, remaining: limit, resetSeconds: Math.ceil(windowMs / 1000) };
  }
}

/**
 * Guesses at the app's secrets (decision links, sign-in links, passkey sign-ins) from one address: each
 * try is counted before the secret is looked up, so tries made at once cannot all pass under the limit,
 * and a try that was valid is given back (`refundGuess`), so any number of people behind one address
 * can use their valid links. While the address is over, a valid link from it is refused as well, so its
 * answers tell a guesser nothing about its tokens.
 */
export const countGuess = (counter: RateCounter, key: string, limit: number, now: number) =>
  checkLimit(counter, key, limit, now);

/** Gives back a try `countGuess` counted that was valid; a counter that fails gives nothing back. */
export const refundGuess = (counter: RateCounter, key: string, now: number) =>
  counter.hit(key, 60_000, now, -1).then(
    () => {},
    () => {},
  );
