/**
 * The storage port's transactions under concurrency, on both backends: many transactions at once
 * (on SQLite they share one commit), each all or nothing, and none answered unless it is stored.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type Db, StorageUnavailableError, UniqueViolationError } from '../src/store/db.ts';
import { openDb } from '../src/store/open.ts';
import { LOCK_FOR_SUBMISSION } from '../src/store/submissions.ts';
import { backends, type Storage } from './support/backends.ts';

class Refused extends Error {}

for (const backend of backends) {
  describe(`storage transactions (${backend.name})`, { skip: backend.skip }, () => {
    let storage: Storage;
    let db: Db;
    before(async () => {
      storage = await backend.create();
      db = await openDb({ databaseUrl: storage.env.DATABASE_URL, dataDir: storage.env.DATA_DIR });
      await db.exec('CREATE TABLE scratch (id TEXT PRIMARY KEY, note TEXT NOT NULL)');
    });
    after(async () => {
      await db.close();
      await storage.drop();
    });
    const ids = async (prefix: string) =>
      (
        await db.all<{ id: string }>('SELECT id FROM scratch WHERE id LIKE $1 ORDER BY id', [`${prefix}%`])
      ).map((row) => row.id);

    test('concurrent transactions: each commits alone or rolls back alone', async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 60 }, (_, n) =>
          db.transaction(async (tx) => {
            const id = `a-${String(n).padStart(2, '0')}`;
            await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [id, 'first']);
            await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`${id}-b`, 'second']);
            if (n % 7 === 3) throw new Refused(`refused ${n}`);
            return n;
          }),
        ),
      );
      const expected: string[] = [];
      outcomes.forEach((outcome, n) => {
        if (n % 7 === 3) {
          assert.equal(outcome.status, 'rejected');
          assert.ok(outcome.status === 'rejected' && outcome.reason instanceof Refused);
          assert.equal((outcome.reason as Error).message, `refused ${n}`);
        } else {
          assert.deepEqual(outcome, { status: 'fulfilled', value: n });
          const id = `a-${String(n).padStart(2, '0')}`;
          expected.push(id, `${id}-b`);
        }
      });
      assert.deepEqual(await ids('a-'), expected.sort());
    });

    test('batched transactions (one key): each commits or fails alone, with its own answer', async () => {
      await db.run("INSERT INTO scratch (id, note) VALUES ('batched-taken', 'before')");
      // One refuses in code, one breaks a unique key (its SQL fails): the others still commit.
      const outcomes = await Promise.allSettled(
        Array.from({ length: 30 }, (_, n) =>
          db.transaction(
            async (tx) => {
              const id = n === 17 ? 'batched-taken' : `batched-${String(n).padStart(2, '0')}`;
              await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [id, 'batched']);
              if (n === 9) throw new Refused('refused 9');
              return n;
            },
            { batch: 'one-key' },
          ),
        ),
      );
      const expected: string[] = [];
      outcomes.forEach((outcome, n) => {
        if (n === 9) assert.ok(outcome.status === 'rejected' && outcome.reason instanceof Refused);
        else if (n === 17)
          assert.ok(outcome.status === 'rejected' && outcome.reason instanceof UniqueViolationError);
        else {
          assert.deepEqual(outcome, { status: 'fulfilled', value: n });
          expected.push(`batched-${String(n).padStart(2, '0')}`);
        }
      });
      assert.deepEqual(await ids('batched-'), [...expected, 'batched-taken'].sort());
    });

    test('batched transactions see the writes of those before them in the batch', async () => {
      const seen = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          db.transaction(
            async (tx) => {
              const count = (await tx.one<{ n: number }>(
                "SELECT COUNT(*) AS n FROM scratch WHERE id LIKE 'seen-%'",
              ))!;
              await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`seen-${n}`, 'x']);
              // PostgreSQL: the transaction it ran in; those batched together share one.
              const txid =
                db.dialect === 'postgres'
                  ? (await tx.one<{ id: string }>('SELECT txid_current() AS id'))!.id
                  : String(n);
              return { count: Number(count.n), txid };
            },
            { batch: 'counting' },
          ),
        ),
      );
      // Each counts the ones before it, whether they committed before or run earlier in its batch.
      assert.deepEqual(
        seen.map(({ count }) => count).sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      );
      // The first runs at once, alone; the nine that came meanwhile share the next transaction.
      if (db.dialect === 'postgres') assert.equal(new Set(seen.map(({ txid }) => txid)).size, 2);
    });

    test('a batch with one that throws: the others commit; only those before it run again', async () => {
      const runs = new Map<number, number>();
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, n) =>
          db.transaction(
            async (tx) => {
              runs.set(n, (runs.get(n) ?? 0) + 1);
              await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`split-${n}`, 'x']);
              if (n === 5) throw new Refused('refused 5');
              return n;
            },
            { batch: 'split' },
          ),
        ),
      );
      outcomes.forEach((outcome, n) =>
        n === 5
          ? assert.ok(outcome.status === 'rejected' && outcome.reason instanceof Refused)
          : assert.deepEqual(outcome, { status: 'fulfilled', value: n }),
      );
      assert.deepEqual(
        await ids('split-'),
        [0, 1, 2, 3, 4, 6, 7, 8, 9].map((n) => `split-${n}`),
      );
      if (db.dialect === 'postgres') {
        // 0 ran alone; 1-9 together, rolled back at 5; 1-4 together again, 5 alone, 6-9 in the next.
        assert.deepEqual(
          [...runs].sort(([a], [b]) => a - b).map(([, count]) => count),
          [1, 2, 2, 2, 2, 2, 1, 1, 1, 1],
        );
      }
    });

    test('afterCommit runs once a transaction has committed, never for one rolled back, in a batch too', async () => {
      const told: string[] = [];
      const outcomes = await Promise.allSettled(
        Array.from({ length: 6 }, (_, n) =>
          db.transaction(
            async (tx) => {
              await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`told-${n}`, 'x']);
              tx.afterCommit(() => told.push(`told-${n}`));
              // Not yet: the transaction has not committed.
              assert.ok(!told.includes(`told-${n}`));
              if (n === 3) throw new Refused('refused 3');
              return n;
            },
            { batch: 'told' },
          ),
        ),
      );
      assert.equal(outcomes.filter((outcome) => outcome.status === 'rejected').length, 1);
      assert.deepEqual(
        told.sort(),
        await ids('told-'),
        'each committed one told once, the refused one never',
      );
      const alone: string[] = [];
      await db.transaction(async (tx) => tx.afterCommit(() => alone.push('done')));
      assert.deepEqual(alone, ['done']);
    });

    test(
      'a batch that cannot get a connection: it and all that wait behind it are told at once',
      { skip: backend.name === 'sqlite' ? 'SQLite has no pool of connections' : false },
      async () => {
        // Every connection of the pool (10) busy for 6 s, past the 5 s a transaction waits for one.
        const busy = Array.from({ length: 10 }, () => db.transaction((tx) => tx.one('SELECT pg_sleep(6)')));
        const settled: number[] = [];
        const outcomes: unknown[] = [];
        const queued = Array.from({ length: 5 }, (_, n) =>
          db
            .transaction((tx) => tx.one('SELECT 1'), { batch: 'starved' })
            .then(
              () => settled.push(n),
              (error: unknown) => {
                settled.push(n);
                outcomes[n] = error;
              },
            ),
        );
        await queued[0];
        // Not one after another, 5 s each: the four behind it were answered with it.
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual([...settled].sort(), [0, 1, 2, 3, 4]);
        for (const error of outcomes) assert.ok(error instanceof StorageUnavailableError);
        assert.equal(outcomes.length, 5);
        await Promise.all(busy);
      },
    );

    test('statements of one transaction issued together run one after the other, in order', async () => {
      const warnings: string[] = [];
      const onWarning = (warning: Error) => void warnings.push(warning.message);
      process.on('warning', onWarning);
      try {
        const rows = await db.transaction(async (tx) => {
          await Promise.all(
            Array.from({ length: 5 }, (_, n) =>
              tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`t-${n}`, String(n)]),
            ),
          );
          return Promise.all([
            tx.all<{ id: string }>("SELECT id FROM scratch WHERE id LIKE 't-%' ORDER BY id"),
            tx.one<{ n: number }>("SELECT COUNT(*) AS n FROM scratch WHERE id LIKE 't-%'"),
          ]);
        });
        assert.deepEqual(
          rows[0].map((row) => row.id),
          ['t-0', 't-1', 't-2', 't-3', 't-4'],
        );
        assert.equal(Number(rows[1]?.n), 5);
        // A warning is emitted on the next tick at the earliest.
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(
          warnings.filter((message) => /already executing a query/.test(message)),
          [],
        );
      } finally {
        process.off('warning', onWarning);
      }
    });

    test('a transaction sees its own writes and those committed before it', async () => {
      await db.transaction((tx) => tx.run("INSERT INTO scratch (id, note) VALUES ('b-0', 'x')"));
      const seen = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          db.transaction(async (tx) => {
            await tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [`b-${n + 1}`, 'y']);
            const own = await tx.one<{ n: unknown }>("SELECT COUNT(*) AS n FROM scratch WHERE id LIKE 'b-%'");
            return Number(own?.n);
          }),
        ),
      );
      // Each counts b-0, its own row, and at least the rows of the transactions committed before it.
      for (const count of seen) assert.ok(count >= 2 && count <= 11, `counted ${count}`);
      assert.equal((await ids('b-')).length, 11);
    });

    test(
      'a full database: the writes that fail are refused as unavailable, and every one answered is stored',
      { skip: backend.name === 'postgres' && 'PostgreSQL has no page limit to fill' },
      async () => {
        const pages = await db.one<{ page_count: number }>('PRAGMA page_count');
        // Room for a couple of pages more: the small rows fit, the big ones do not.
        await db.exec(`PRAGMA max_page_count = ${Number(pages?.page_count) + 2}`);
        try {
          const big = 'x'.repeat(64 * 1024);
          const outcomes = await Promise.allSettled(
            Array.from({ length: 20 }, (_, n) =>
              db.transaction((tx) =>
                tx.run('INSERT INTO scratch (id, note) VALUES ($1, $2)', [
                  `c-${String(n).padStart(2, '0')}`,
                  n % 5 === 2 ? big : 'small',
                ]),
              ),
            ),
          );
          const stored = new Set(await ids('c-'));
          outcomes.forEach((outcome, n) => {
            const id = `c-${String(n).padStart(2, '0')}`;
            if (outcome.status === 'fulfilled') assert.ok(stored.has(id), `${id} answered but not stored`);
            else {
              assert.ok(outcome.reason instanceof StorageUnavailableError, String(outcome.reason));
              assert.ok(!stored.has(id), `${id} refused but stored`);
            }
          });
          assert.ok(
            outcomes.some((o) => o.status === 'rejected'),
            'the big rows must not fit',
          );
        } finally {
          await db.exec('PRAGMA max_page_count = 1073741823');
        }
        // The connection is usable again once there is room.
        await db.transaction((tx) => tx.run("INSERT INTO scratch (id, note) VALUES ('c-after', 'ok')"));
        assert.deepEqual(await ids('c-after'), ['c-after']);
      },
    );

    test(
      'lock_for_submission is the function made from the store’s read',
      { skip: backend.name === 'sqlite' && 'a PostgreSQL function' },
      async () => {
        const row = await db.one<{ body: string }>(
          // This schema's: others in the test database may be of other versions.
          `SELECT prosrc AS body FROM pg_proc
           WHERE proname = 'lock_for_submission' AND pronamespace = current_schema()::regnamespace`,
        );
        assert.ok(LOCK_FOR_SUBMISSION.includes(`$$${row!.body}$$`), row!.body);
      },
    );
  });
}

test('lock_for_submission is made from the read migration 043 made it from', () => {
  // A database keeps the function its last migration made. A change to the read (store/submissions.ts)
  // needs a migration that makes the function again (listed in store/migrate.ts), and its new hash here.
  assert.equal(
    createHash('sha256').update(LOCK_FOR_SUBMISSION).digest('hex'),
    'c457a153b6a11be1546469a0b894ccdf5ac3bda4fe18d47a7ddd02b89b24c701',
  );
});
