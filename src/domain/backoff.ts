/** How long to wait before trying again: a first wait that doubles with each failure, up to a longest. */
export interface Backoff {
  firstMs: number;
  longestMs: number;
  /** Spread each wait by up to ± this fraction (0.2: 80 % to 120 %), so many senders' retries do not bunch. */
  jitter?: number;
}

/**
 * The wait after failure `failure` (1, 2, …): min(first × 2^(failure−1), longest), spread by the jitter
 * with `random` (in [0, 1]), times `scale` (tests shrink the schedule), rounded to the millisecond.
 * `atLeastMs` (a receiver's Retry-After) is honoured when longer, but never past the longest wait.
 */
export function backoffDelay(
  schedule: Backoff,
  failure: number,
  options: { random?: number; scale?: number; atLeastMs?: number } = {},
): number {
  const { firstMs, longestMs, jitter = 0 } = schedule;
  const { random = 0.5, scale = 1, atLeastMs = 0 } = options;
  const base = Math.min(firstMs * 2 ** (failure - 1), longestMs);
  const spread = base * (1 - jitter + 2 * jitter * random);
  return Math.round(Math.max(spread, Math.min(atLeastMs, longestMs)) * scale);
}
