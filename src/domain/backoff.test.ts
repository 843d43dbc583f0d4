import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Backoff, backoffDelay } from './backoff.ts';

// The sequences each schedule produced before they shared this function, pinned as they were.
const delays = (schedule: Backoff, failures: number, options?: Parameters<typeof backoffDelay>[2]) =>
  Array.from({ length: failures }, (_, i) => backoffDelay(schedule, i + 1, options));

test('notifications: 5 s doubling, at most an hour, scaled', () => {
  const schedule = { firstMs: 5_000, longestMs: 3_600_000 };
  const full = [5000, 10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 640_000, 1_280_000, 2_560_000];
  assert.deepEqual(delays(schedule, 10), full);
  assert.equal(backoffDelay(schedule, 11), 3_600_000);
  assert.deepEqual(
    delays(schedule, 10, { scale: 0.001 }),
    full.map((ms) => ms / 1000),
  );
  assert.deepEqual(
    delays(schedule, 10, { scale: 0.0137 }),
    [69, 137, 274, 548, 1096, 2192, 4384, 8768, 17_536, 35_072],
  );
});

test('webhooks: 5 s doubling, ±20 % jitter, at most 4 h, Retry-After within it', () => {
  const schedule = { firstMs: 5_000, longestMs: 4 * 3_600_000, jitter: 0.2 };
  const doubling = (first: number, cap: number) =>
    Array.from({ length: 25 }, (_, i) => Math.min(first * 2 ** i, cap));
  assert.deepEqual(delays(schedule, 25, { random: 0 }), doubling(4000, 11_520_000));
  assert.deepEqual(delays(schedule, 25, { random: 1 }), doubling(6000, 17_280_000));
  assert.deepEqual(delays(schedule, 25, { random: 0, scale: 0.001 }), doubling(4, 11_520));
  assert.deepEqual(delays(schedule, 25, { random: 0.37 }), doubling(4740, 13_651_200));
  assert.deepEqual(
    delays(schedule, 14, { random: 0.37, scale: 0.001 }),
    [5, 9, 19, 38, 76, 152, 303, 607, 1213, 2427, 4854, 9708, 13_651, 13_651],
  );
  const after = (failure: number, atLeastMs: number, scale = 1, random = 0.5) =>
    backoffDelay(schedule, failure, { random, scale, atLeastMs });
  assert.deepEqual(
    [after(1, 60_000), after(1, 360_000_000), after(5, 1000), after(3, 45_000), after(14, 20_000_000)],
    [60_000, 14_400_000, 80_000, 45_000, 14_400_000],
  );
  assert.deepEqual([after(1, 60_000, 0.001, 0.37), after(3, 45_000, 0.001, 0.37)], [60, 45]);
});

test('MCP upstream retries: 2 s doubling, at most 30 s', () => {
  assert.deepEqual(
    delays({ firstMs: 2_000, longestMs: 30_000 }, 7),
    [2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000],
  );
});

test('Redis reconnects: 100 ms doubling, at most 5 s', () => {
  assert.deepEqual(
    delays({ firstMs: 100, longestMs: 5_000 }, 9),
    [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000],
  );
});
