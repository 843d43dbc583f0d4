/**
 * Checkpoints off the event loop: the connection never runs one itself, and what it writes still
 * reaches the database file, by the worker's checkpoints, while it goes on writing.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { until } from '../../test/support/wait.ts';
import { openSqlite } from './sqlite.ts';

test("the log reaches the database by the worker's checkpoints, none of them in a commit", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-checkpoints-'));
  const file = join(dir, 'x.db');
  let db = openSqlite(file);
  try {
    assert.equal(
      (await db.one<{ wal_autocheckpoint: number }>('PRAGMA wal_autocheckpoint'))?.wal_autocheckpoint,
      0,
    );
    await db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const body = 'x'.repeat(4000);
    // About 12 MB of rows, three times the log's growth that asks for a checkpoint.
    for (let batch = 0; batch < 30; batch++) {
      await db.transaction(async (tx) => {
        for (let i = 0; i < 100; i++) await tx.run('INSERT INTO rows (body) VALUES ($1)', [body]);
      });
    }
    // The database file holds most of it, though the connection checkpointed nothing itself.
    await until('the checkpoints', () => (statSync(file).size > 8_000_000 ? true : undefined));
    await db.close();
    db = openSqlite(file);
    assert.equal((await db.one<{ n: number }>('SELECT count(*) AS n FROM rows'))?.n, 3000);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
