/**
 * Rate-limit windows counted in the database (PostgreSQL, several instances): every instance sees the
 * same count. The HTTP rate limiter's shared counter (web/rate-limiter.ts) counts through these.
 */
import { hitRateWindow, pruneRateWindows } from '../store/rate-windows.ts';
import type { ServiceContext } from './context.ts';

/** Counts `by` hits of `key` in the window that began at `windowStart`; answers the window's count so far. */
export const countRateHit = (ctx: ServiceContext, key: string, windowStart: number, by = 1) =>
  hitRateWindow(ctx.db, key, windowStart, by);

/** Drops the windows that began before `before`. */
export const dropRateWindowsBefore = (ctx: ServiceContext, before: number) =>
  pruneRateWindows(ctx.db, before);
