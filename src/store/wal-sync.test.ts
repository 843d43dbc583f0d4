/** The log's sync: commits answered after a sync that began after them; a failed sync is final. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { StorageUnavailableError } from './db.ts';
import { walSync } from './wal-sync.ts';

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
    // A lazy commit starts a sync but holds no reader back (answered within two turns of microtasks,
    // where a sync needs the thread pool).
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
