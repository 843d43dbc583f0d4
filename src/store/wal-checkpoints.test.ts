/**
 * Checkpoints off the event loop: the connection never runs one itself, what it writes still reaches
 * the database file by the worker's checkpoints while it goes on writing, and under a steady stream of
 * writes the log stays bounded (a passive checkpoint alone never catches up with a steady writer).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqlite } from './sqlite.ts';
import { LOG_LIMIT_BYTES } from './wal-checkpoints.ts';

test('under steady writes the log reaches the database by the worker and stays under twice its limit', async () => {
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
    // Four writers back to back, 100 KB a transaction: four times the log's limit in all, with no
    // pause in which a passive checkpoint could catch up by itself.
    const transactions = (4 * LOG_LIMIT_BYTES) / 100_000;
    let started = 0;
    const writer = async () => {
      while (started++ < transactions) {
        await db.transaction(async (tx) => {
          for (let i = 0; i < 25; i++) await tx.run('INSERT INTO rows (body) VALUES ($1)', [body]);
        });
      }
    };
    await Promise.all([writer(), writer(), writer(), writer()]);
    // The log file keeps its largest size: it never held more than its limit and what came while
    // the checkpoint that found it full ran.
    assert.ok(
      statSync(`${file}-wal`).size < 2 * LOG_LIMIT_BYTES,
      `log of ${statSync(`${file}-wal`).size} bytes`,
    );
    // The database file holds most of it, though the connection checkpointed nothing itself.
    assert.ok(statSync(file).size > 2 * LOG_LIMIT_BYTES, `database of ${statSync(file).size} bytes`);
    await db.close();
    db = openSqlite(file);
    assert.equal((await db.one<{ n: number }>('SELECT count(*) AS n FROM rows'))?.n, transactions * 25);
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a command that closes the database while a checkpoint runs exits when closed, not before', () => {
  // `workspace create --init` migrates a new database and closes it while the worker may still be
  // checkpointing: its answer then came while `close` waited for the worker to exit, and left that wait
  // without a handle, so Node ended the process ("unsettled top-level await", code 13) in 5 of 12 runs.
  const bin = new URL('../../bin/approvals.js', import.meta.url).pathname;
  for (let run = 0; run < 8; run++) {
    const dir = mkdtempSync(join(tmpdir(), 'approvals-checkpoints-'));
    try {
      const child = spawnSync(
        process.execPath,
        [bin, 'workspace', 'create', 'fresh', '--name', 'Fresh', '--init', '--json'],
        { encoding: 'utf8', env: { ...process.env, DATA_DIR: dir, DATABASE_URL: '' } },
      );
      assert.equal(child.status, 0, child.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});
