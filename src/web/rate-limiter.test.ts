import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkLimit, countGuess, MemoryRateCounter, type RateCounter, refundGuess } from './rate-limiter.ts';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 5);

test('guesses: each try counts, a valid one is given back, and 20 failures close the window', async () => {
  const counter = new MemoryRateCounter();
  for (let i = 0; i < 50; i++) {
    assert.equal((await countGuess(counter, 'ip:a', 20, NOW)).allowed, true);
    await refundGuess(counter, 'ip:a', NOW);
  }
  for (let i = 0; i < 19; i++) await countGuess(counter, 'ip:a', 20, NOW);
  assert.deepEqual(await countGuess(counter, 'ip:a', 20, NOW), {
    allowed: true,
    limit: 20,
    remaining: 0,
    resetSeconds: 55,
  });
  assert.equal((await countGuess(counter, 'ip:a', 20, NOW)).allowed, false);
  assert.equal((await countGuess(counter, 'ip:b', 20, NOW)).allowed, true, 'another address');
  assert.equal((await countGuess(counter, 'ip:a', 20, NOW + 55_000)).allowed, true, 'the next window');
  // A request counted the usual way is still counted.
  assert.equal((await checkLimit(counter, 'ip:c', 1, NOW)).allowed, true);
  assert.equal((await checkLimit(counter, 'ip:c', 1, NOW)).allowed, false);
});

test('guesses: tries made at once cannot all pass under the limit while their secrets are looked up', async () => {
  const counter = new MemoryRateCounter();
  // Each failed try looks its secret up (5 ms) between being allowed and failing, 200 at once.
  const tries = Array.from({ length: 200 }, async () => {
    const limit = await countGuess(counter, 'ip:a', 20, NOW);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return limit.allowed;
  });
  const allowed = (await Promise.all(tries)).filter(Boolean).length;
  assert.equal(allowed, 20);
});

test('guesses: a counter that fails lets the try through and gives nothing back', async () => {
  const broken: RateCounter = { hit: async () => Promise.reject(new Error('counter down')) };
  assert.equal((await countGuess(broken, 'ip:a', 20, NOW)).allowed, true);
  await refundGuess(broken, 'ip:a', NOW);
});
