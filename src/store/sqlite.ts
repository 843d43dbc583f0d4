/** SQLite adapter (node:sqlite): the embedded default. One connection; work is queued through it. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { type Db, type Sql, StorageUnavailableError, UniqueViolationError } from './db.ts';

/** `$1` → `?1`; row locks are PostgreSQL's (SQLite's write transactions are exclusive already). */
function translate(text: string): string {
  return text.replace(/\$(\d+)/g, '?$1').replace(/\bFOR UPDATE(?: OF \w+)?(?: SKIP LOCKED)?/g, '');
}

function mapError(error: unknown): unknown {
  const code = (error as { errcode?: number }).errcode;
  // SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY
  if (code === 2067 || code === 1555) return new UniqueViolationError(error);
  // SQLITE_BUSY, SQLITE_IOERR, SQLITE_FULL, SQLITE_CANTOPEN and their extended codes
  const primary = (code ?? 0) & 0xff;
  if ([5, 10, 13, 14].includes(primary)) return new StorageUnavailableError(error);
  return error;
}

export function openSqlite(file: string): Db {
  mkdirSync(dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  // WAL with FULL sync: a commit is on disk before we answer, so an acknowledged write survives a crash.
  db.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
  );

  const statements = new Map<string, StatementSync>();
  const prepare = (text: string) => {
    let statement = statements.get(text);
    if (!statement) {
      statement = db.prepare(translate(text));
      statements.set(text, statement);
    }
    return statement;
  };
  const guard = <T>(work: () => T): T => {
    try {
      return work();
    } catch (error) {
      throw mapError(error);
    }
  };
  const direct: Sql = {
    all: async <T>(text: string, params: unknown[] = []) =>
      guard(() => prepare(text).all(...(params as SQLInputValue[])) as T[]),
    one: async <T>(text: string, params: unknown[] = []) =>
      guard(() => prepare(text).get(...(params as SQLInputValue[])) as T | undefined),
    run: async (text, params = []) =>
      guard(() => Number(prepare(text).run(...(params as SQLInputValue[])).changes)),
    exec: async (text) => guard(() => db.exec(text)),
  };

  // The connection is shared, so a transaction must not interleave with other work: queue everything.
  let queue: Promise<unknown> = Promise.resolve();
  const serialize = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work, work);
    queue = result.catch(() => undefined);
    return result;
  };

  return {
    dialect: 'sqlite',
    all: (text, params) => serialize(() => direct.all(text, params)),
    one: (text, params) => serialize(() => direct.one(text, params)),
    run: (text, params) => serialize(() => direct.run(text, params)),
    exec: (text) => serialize(() => direct.exec(text)),
    transaction: (work) =>
      serialize(async () => {
        guard(() => db.exec('BEGIN IMMEDIATE'));
        try {
          const result = await work(direct);
          guard(() => db.exec('COMMIT'));
          return result;
        } catch (error) {
          if (db.isTransaction) db.exec('ROLLBACK');
          throw error;
        }
      }),
    close: () =>
      serialize(async () => {
        statements.clear();
        db.close();
      }),
  };
}
