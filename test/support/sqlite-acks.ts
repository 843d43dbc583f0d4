/**
 * Child of test/sqlite-sync.test.ts, run under strace: rounds of writes and reads of a fresh SQLite
 * file, printing `acked <name>` as each is answered. A round starts once the one before is answered, so
 * the log writes seen before an answer are its own round's. `node sqlite-acks.ts <dir>`
 */
import type { Sql } from '../../src/store/db.ts';
import { openSqlite } from '../../src/store/sqlite.ts';

const db = openSqlite(`${process.argv[2]}/acks.db`);
await db.exec('CREATE TABLE acks (id TEXT PRIMARY KEY)');
const acked = (name: string) => () => void process.stdout.write(`acked ${name}\n`);
const insert = (id: string) => (tx: Sql) => tx.run('INSERT INTO acks (id) VALUES ($1)', [id]);
for (let round = 0; round < 6; round++) {
  // Four transactions begun in one turn share one commit.
  await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      db.transaction(insert(`t-${round}-${i}`)).then(acked(`t-${round}-${i}`)),
    ),
  );
  // A write outside a transaction commits by itself.
  await db.run('INSERT INTO acks (id) VALUES ($1)', [`w-${round}`]).then(acked(`w-${round}`));
  // A lazy transaction is answered once committed, without waiting for the sync.
  await db.transaction(insert(`lazy-${round}`), { lazy: true }).then(acked(`lazy-${round}`));
  // A read sent right behind a write sees its row, and is answered only once that row is on disk.
  const write = db.run('INSERT INTO acks (id) VALUES ($1)', [`r-${round}`]);
  const read = db.one('SELECT id FROM acks WHERE id = $1', [`r-${round}`]).then(acked(`read-${round}`));
  await Promise.all([write, read]);
}
await db.close();
