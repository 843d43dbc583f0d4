/** SQLite adapter (node:sqlite): the embedded default. One connection; work is queued through it. */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { type Db, type Sql, StorageUnavailableError, UniqueViolationError } from './db.ts';
import { type WalCheckpoints, walCheckpoints } from './wal-checkpoints.ts';
import { type WalSync, walSync } from './wal-sync.ts';

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

/** Runs `work` with SQLite's errors mapped to the port's. */
const guard = <T>(work: () => T): T => {
  try {
    return work();
  } catch (error) {
    throw mapError(error);
  }
};

/** A transaction waiting for the next group commit. */
interface Queued {
  work: (tx: Sql) => Promise<unknown>;
  lazy: boolean;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit: the transactions begun in one turn of the event loop share one BEGIN…COMMIT, each
 * in a savepoint of its own; one that fails is rolled back alone. None is answered before the
 * shared COMMIT is on disk (a lazy one: before it is in the log), and while the log is synced the
 * connection goes on with the next batch, which the next sync covers.
 */
async function commitTogether(
  db: DatabaseSync,
  direct: Sql,
  wal: WalSync,
  checkpoints: WalCheckpoints,
  waiting: Queued[],
) {
  while (waiting.length > 0) {
    try {
      guard(() => db.exec('BEGIN IMMEDIATE'));
    } catch (error) {
      for (const item of waiting) item.reject(error);
      return;
    }
    const done: { item: Queued; result: unknown; committed: (() => void)[] }[] = [];
    let lost: unknown;
    while (waiting.length > 0 && lost === undefined) {
      const item = waiting.shift()!;
      const committed: (() => void)[] = [];
      db.exec('SAVEPOINT tx');
      try {
        const result = await item.work({ ...direct, afterCommit: (then) => committed.push(then) });
        db.exec('RELEASE tx');
        done.push({ item, result, committed });
      } catch (error) {
        item.reject(error);
        if (db.isTransaction) db.exec('ROLLBACK TO tx; RELEASE tx');
        // Some errors (a full disk, an I/O error) end the whole transaction: the others wait for a new one.
        else lost = error;
      }
    }
    try {
      if (lost !== undefined) throw lost;
      guard(() => db.exec('COMMIT'));
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      for (const { item } of done) item.reject(error);
      continue;
    }
    for (const then of done.flatMap(({ committed }) => committed)) then();
    checkpoints.written();
    const durable = done.some(({ item }) => !item.lazy) ? wal.committed() : null;
    if (!durable) wal.committedLazily();
    for (const { item, result } of done) {
      if (item.lazy || !durable) item.resolve(result);
      else durable.then(() => item.resolve(result), item.reject);
    }
  }
}

/** Each text prepared once; `arrays`: a statement of its own, whose rows are arrays (`Sql.arrays`). */
function statementsOf(db: DatabaseSync) {
  const prepared = { objects: new Map<string, StatementSync>(), arrays: new Map<string, StatementSync>() };
  return {
    prepare(text: string, arrays = false) {
      const statements = arrays ? prepared.arrays : prepared.objects;
      let statement = statements.get(text);
      if (!statement) {
        statement = db.prepare(translate(text));
        statement.setReturnArrays(arrays);
        statements.set(text, statement);
      }
      return statement;
    },
    clear() {
      prepared.objects.clear();
      prepared.arrays.clear();
    },
  };
}

export function openSqlite(file: string): Db {
  mkdirSync(dirname(file), { recursive: true });
  const db = new DatabaseSync(file);
  // WAL, synced off the event loop (wal-sync.ts): a write is on disk before we answer it, and so is
  // what a read sees, so an acknowledged write survives a crash of the process and of the machine.
  db.exec(
    'PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;',
  );
  const wal = walSync(`${file}-wal`);
  // Checkpoints on a thread of their own, not in a commit on the event loop.
  const checkpoints = walCheckpoints(db, file);

  const { prepare, clear } = statementsOf(db);
  const direct: Sql = {
    all: async <T>(text: string, params: unknown[] = []) =>
      guard(() => prepare(text).all(...(params as SQLInputValue[])) as T[]),
    one: async <T>(text: string, params: unknown[] = []) =>
      guard(() => prepare(text).get(...(params as SQLInputValue[])) as T | undefined),
    arrays: async (text: string, params: unknown[] = []) =>
      guard(() => prepare(text, true).all(...(params as SQLInputValue[])) as unknown as unknown[][]),
    run: async (text, params = []) =>
      guard(() => Number(prepare(text).run(...(params as SQLInputValue[])).changes)),
    exec: async (text) => guard(() => db.exec(text)),
    afterCommit: (then) => then(),
  };

  // The connection is shared, so a transaction must not interleave with other work: queue everything.
  let queue: Promise<unknown> = Promise.resolve();
  const serialize = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work, work);
    queue = result.catch(() => undefined);
    return result;
  };

  let batch: Queued[] = [];
  const commitBatch = () => {
    const waiting = batch;
    batch = [];
    return commitTogether(db, direct, wal, checkpoints, waiting);
  };
  /** A write outside a transaction (it commits by itself) is answered once it is on disk too. */
  const written = async <T>(result: T) => {
    checkpoints.written();
    await wal.committed();
    return result;
  };
  /** A read is answered once what it could see is on disk: no reader acts on a commit a crash undoes. */
  const read = async <T>(result: T) => {
    await wal.caughtUp();
    return result;
  };

  return {
    dialect: 'sqlite',
    all: <T>(text: string, params?: unknown[]) => serialize(() => direct.all<T>(text, params)).then(read),
    one: <T>(text: string, params?: unknown[]) => serialize(() => direct.one<T>(text, params)).then(read),
    arrays: (text: string, params?: unknown[]) => serialize(() => direct.arrays!(text, params)).then(read),
    run: (text, params) =>
      serialize(() => direct.run(text, params)).then((changes) =>
        changes > 0 ? written(changes) : read(changes),
      ),
    exec: (text) => serialize(() => direct.exec(text)).then(written),
    afterCommit: (then) => then(),
    transaction: <T>(work: (tx: Sql) => Promise<T>, options: { lazy?: boolean } = {}) =>
      new Promise<T>((resolve, reject) => {
        batch.push({
          work,
          lazy: options.lazy === true,
          resolve: resolve as (result: unknown) => void,
          reject,
        });
        // setImmediate runs after this turn's I/O callbacks, so every request read in it joins; while
        // the log is being synced, the batch also waits for that sync (it could not be answered
        // before the next one), so more transactions share one commit and one sync. While the log is
        // past its limit, the batch also waits for a checkpoint to catch up (wal-checkpoints.ts).
        if (batch.length === 1)
          void Promise.all([wal.syncDone(), checkpoints.room()]).then(() =>
            setImmediate(() => void serialize(commitBatch)),
          );
      }),
    close: () =>
      serialize(async () => {
        await checkpoints.close();
        await wal.close();
        clear();
        db.close();
      }),
  };
}
