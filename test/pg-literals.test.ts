/**
 * In a transaction the PostgreSQL adapter writes parameters into the statement's text, to send
 * several statements in one round trip (src/store/postgres.ts, issue 43). What it stores that way must
 * be what a prepared statement stores from the same parameters: quotes, backslashes (PostgreSQL's
 * E'' strings), dollar signs and digits that look like parameters, characters outside ASCII, bytes,
 * numbers, booleans and null.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Db } from '../src/store/db.ts';
import { openPostgres } from '../src/store/postgres.ts';
import { postgres, type Storage } from './support/backends.ts';

const VALUES: unknown[] = [
  "it's",
  "''",
  'back\\slash',
  "\\'",
  'ends with \\',
  '$1 and $2',
  'line\nbreak\ttab',
  'é 😀 漢字',
  '{"a":"b\\"c","d":"it\'s"}',
  '',
  ' leading and trailing ',
  12345,
  -0.5,
  true,
  null,
];

describe('parameters written into the text of a transaction (postgres)', { skip: postgres.skip }, () => {
  let storage: Storage;
  let db: Db;
  before(async () => {
    storage = await postgres.create();
    db = openPostgres(storage.env.DATABASE_URL!);
    await db.exec('CREATE TABLE literals (id INTEGER, via TEXT, value TEXT, bytes BYTEA)');
  });
  after(async () => {
    await db?.close();
    await storage?.drop();
  });

  const insert = 'INSERT INTO literals (id, via, value, bytes) VALUES ($1, $2, $3, $4)';
  const bytes = Uint8Array.from([0, 39, 92, 255, 36]);

  test('are stored as a prepared statement stores them', async () => {
    for (const [id, value] of VALUES.entries()) {
      await db.run(insert, [id, 'prepared', value, bytes]);
      // Kept with the next statement: sent with the COMMIT as text.
      await db.transaction(async (tx) =>
        tx.writeWithNext!([{ text: insert, params: [id, 'text', value, bytes] }]),
      );
    }
    const rows = await db.all<{ id: number; via: string; value: string | null; bytes: Buffer }>(
      'SELECT id, via, value, bytes FROM literals ORDER BY id, via',
    );
    assert.equal(rows.length, VALUES.length * 2);
    for (const [id, value] of VALUES.entries()) {
      const [prepared, text] = rows.filter((row) => row.id === id);
      assert.equal(prepared!.via, 'prepared');
      assert.equal(text!.via, 'text');
      assert.deepEqual(text!.value, prepared!.value, `value ${JSON.stringify(value)}`);
      assert.equal(text!.value, value === null ? null : String(value));
      assert.deepEqual([...text!.bytes], [...bytes]);
    }
  });
});
