import assert from 'node:assert/strict';
import { test } from 'node:test';
import { randomBytes, randomId } from './ids.ts';

test('random bytes are drawn in pools but handed out once: no two ids alike, across refills', () => {
  const ids = new Set(Array.from({ length: 20_000 }, () => randomId('x_')));
  assert.equal(ids.size, 20_000);
  // Sizes that straddle a refill, and one larger than a pool.
  for (const count of [1, 4000, 200, 4096, 5000, 32]) {
    const bytes = randomBytes(count);
    assert.equal(bytes.length, count);
    // 32 or more random bytes are never all zero (a pool handed out after being wiped would be).
    if (count >= 32) assert.ok(bytes.some((byte) => byte !== 0));
  }
});
