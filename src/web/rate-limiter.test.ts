import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkGuesses, checkLimit, countFailedGuess, MemoryRateCounter } from './rate-limiter.ts';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 5);

test('guesses: reading counts nothing; only failures do, and 20 of them close the window', async () => {
  const counter = new MemoryRateCounter();
  for (let i = 0; i < 50; i++) assert.equal((await checkGuesses(counter, 'ip:a', 20, NOW)).allowed, true);
  for (let i = 0; i < 19; i++) await countFailedGuess(counter, 'ip:a', NOW);
  assert.deepEqual(await checkGuesses(counter, 'ip:a', 20, NOW), {
    allowed: true,
    limit: 20,
    remaining: 0,
    resetSeconds: 55,
  });
  await countFailedGuess(counter, 'ip:a', NOW);
  assert.equal((await checkGuesses(counter, 'ip:a', 20, NOW)).allowed, false);
  assert.equal((await checkGuesses(counter, 'ip:b', 20, NOW)).allowed, true, 'another address');
  assert.equal((await checkGuesses(counter, 'ip:a', 20, NOW + 55_000)).allowed, true, 'the next window');
  // A request counted the usual way is still counted.
  assert.equal((await checkLimit(counter, 'ip:c', 1, NOW)).allowed, true);
  assert.equal((await checkLimit(counter, 'ip:c', 1, NOW)).allowed, false);
});

test('guesses: a counter that fails lets the try through and counts nothing', async () => {
  const broken = { hit: async () => Promise.reject(new Error('counter down')) };
  assert.equal((await checkGuesses(broken, 'ip:a', 20, NOW)).allowed, true);
  await countFailedGuess(broken, 'ip:a', NOW);
});
