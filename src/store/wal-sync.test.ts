/** The log's sync: commits answered after a sync that began after them; a failed sync is final. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { StorageUnavailableError } from './db.ts';
import { LAZY_SYNC_MS, walSync } from './wal-sync.ts';
import { until } from '../../test/support/wait.ts';

test('commits made during a sync wait for the next one; every waiter is answered', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-wal-'));
  const log = join(dir, 'x.db-wal');
  writeFileSync(log, 'frames');
  const wal = walSync(log);
  try {
    const order: string[] = [];
    const first = wal.committed().then(() => order.push('first'));
    // Made while the first sync runs: answered only after a second one.
    const second = wal.committed().then(() => order.push('second'));
    const read = wal.caughtUp().then(() => order.push('read'));
    await Promise.all([first, second, read]);
    assert.deepEqual(order, ['first', 'second', 'read']);
    // Nothing new since: a read is answered at once, and no sync is under way.
    await wal.caughtUp();
    await wal.syncDone();
    // A lazy commit holds no reader back (answered within two turns of microtasks, where a sync
    // needs the thread pool).
    wal.committedLazily();
    let answered = false;
    void wal.caughtUp().then(() => (answered = true));
    await Promise.resolve();
    await Promise.resolve();
    assert.equal(answered, true);
    await wal.syncDone();
  } finally {
    await wal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failed sync is final: later commits and reads fail as unavailable, even once the log is there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-wal-'));
  const log = join(dir, 'x.db-wal');
  const wal = walSync(log);
  try {
    // No log file to open: the sync fails.
    await assert.rejects(wal.committed(), StorageUnavailableError);
    writeFileSync(log, 'frames');
    await assert.rejects(wal.committed(), StorageUnavailableError);
    await assert.rejects(wal.caughtUp(), StorageUnavailableError);
  } finally {
    await wal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a lazy commit starts no sync of its own: the next commit's covers it, or one comes within LAZY_SYNC_MS", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-wal-'));
  const log = join(dir, 'x.db-wal');
  writeFileSync(log, 'frames');
  const wal = walSync(log);
  try {
    // A commit that waits, right after a lazy one: one sync for both, and it does not wait for two.
    wal.committedLazily();
    await wal.committed();
    assert.equal(wal.syncs, 1);
    // Alone, a lazy commit is synced all the same, a little later.
    wal.committedLazily();
    assert.equal(wal.syncs, 1);
    await until(
      "the lazy commit's sync",
      () => (wal.syncs === 2 ? true : undefined),
      10 * LAZY_SYNC_MS + 1_000,
    );
    // Closing syncs what is still lazy.
    wal.committedLazily();
    await wal.close();
    assert.equal(wal.syncs, 3);
  } finally {
    await wal.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
