/** The worker loop's `settle`: a round begun after the call, and the work it started, are finished. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { startWorker } from './loop.ts';

const log = { warn: () => {} } as unknown as FastifyBaseLogger;

/** A promise and the function that settles it. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

test('settle runs a round now and waits for it and for the work it started', async () => {
  const rounds: string[] = [];
  let started: Promise<void>[] = [];
  const worker = startWorker({
    name: 'test',
    intervalMs: 3_600_000, // no round by the interval during the test: only the first, and asked ones
    log,
    async round() {
      rounds.push('round');
      return started.splice(0);
    },
  });
  try {
    await worker.settle();
    const count = rounds.length;
    const work = gate();
    let done = false;
    started = [work.opened.then(() => void (done = true))];
    const settled = worker.settle().then(() => 'settled');
    // The round ran at once (not an hour later), and settle waits for what it started.
    const first = await Promise.race([settled, new Promise((resolve) => setImmediate(resolve, 'waiting'))]);
    assert.equal(first, 'waiting');
    assert.equal(rounds.length, count + 1);
    work.open();
    assert.equal(await settled, 'settled');
    assert.equal(done, true);
  } finally {
    await worker.stop();
  }
});

test('a failed round is logged and settle still resolves; after stop it resolves at once', async () => {
  const warned: string[] = [];
  const worker = startWorker({
    name: 'failing',
    intervalMs: 3_600_000,
    log: { warn: (_: unknown, message: string) => warned.push(message) } as unknown as FastifyBaseLogger,
    round: () => Promise.reject(new Error('storage away')),
  });
  await worker.settle();
  assert.ok(warned.includes('failing round failed; retrying'));
  await worker.stop();
  await worker.settle();
});
