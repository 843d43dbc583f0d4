/** PostgreSQL adapter (pg): for scale-out, several instances on one database. */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { type Db, type Sql, StorageUnavailableError, UniqueViolationError } from './db.ts';

// int8 (counts, epoch milliseconds) and numeric as JS numbers: every value we store fits in 2^53.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 || oid === 1700
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as never,
};

function mapError(error: unknown): unknown {
  const code = (error as { code?: string }).code ?? '';
  if (code === '23505') return new UniqueViolationError(error);
  // connection refused/reset, class 08 (connection), 53 (resources, disk full), 57P (shutdown)
  if (
    /^(E[A-Z]+|08...|53...|57P0[1-3])$/.test(code) ||
    /Connection terminated|timeout exceeded/i.test(String(error))
  ) {
    return new StorageUnavailableError(error);
  }
  return error;
}

/**
 * Statements with parameters are prepared once per connection under a name derived from their text,
 * so PostgreSQL parses and plans each only once instead of on every call. Not those with a list of
 * parameters as long as their input (`IN ($1, …, $n)`): their texts are many, each used rarely.
 */
const PREPARED_PARAMS_AT_MOST = 40;
/** At most this many transactions of one batch key share a commit. */
const MAX_BATCH = 32;
const statementNames = new Map<string, string>();
function statementName(text: string): string {
  let name = statementNames.get(text);
  if (!name) {
    name = `s${createHash('sha256').update(text).digest('hex').slice(0, 16)}`;
    statementNames.set(text, name);
  }
  return name;
}

function executor(client: pg.Pool | pg.PoolClient): Sql {
  const query = async (text: string, params: unknown[] = []) => {
    try {
      return await client.query(
        params.length > 0 && params.length <= PREPARED_PARAMS_AT_MOST
          ? { name: statementName(text), text, values: params }
          : { text, values: params },
      );
    } catch (error) {
      throw mapError(error);
    }
  };
  return {
    all: async <T>(text: string, params?: unknown[]) => (await query(text, params)).rows as T[],
    one: async <T>(text: string, params?: unknown[]) => (await query(text, params)).rows[0] as T | undefined,
    run: async (text, params) => (await query(text, params)).rowCount ?? 0,
    exec: async (text) => {
      await query(text);
    },
  };
}

export function openPostgres(url: string, options: { max?: number } = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    types,
    connectionTimeoutMillis: 5000,
  });
  // An idle client whose server went away must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  /** One transaction on a connection of its own. */
  async function runAlone<T>(work: (tx: Sql) => Promise<T>, lazy = false): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw mapError(error);
    }
    // A connection lost while checked out is reported on the client, not the pool: the query in
    // flight fails anyway, so the event itself must not crash the process.
    const ignore = () => {};
    client.on('error', ignore);
    const tx = executor(client);
    try {
      // Lazy: committed without waiting for the disk (one round trip with the BEGIN, as its text).
      await tx.exec(lazy ? 'BEGIN; SET LOCAL synchronous_commit TO OFF' : 'BEGIN');
      const result = await work(tx);
      await tx.exec('COMMIT');
      client.off('error', ignore);
      client.release();
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.off('error', ignore);
      client.release(error instanceof StorageUnavailableError);
      throw error;
    }
  }

  interface Queued {
    work: (tx: Sql) => Promise<unknown>;
    resolve: (result: unknown) => void;
    reject: (error: unknown) => void;
  }
  /** Per batch key, the transactions waiting for the one running. */
  const batches = new Map<string, Queued[]>();

  /**
   * Runs the key's transactions until none waits: each time, all that came meanwhile in one
   * transaction, one after the other (each sees the writes of those before it), one commit for all.
   * When it fails, each runs again alone and gets its own answer, except when the database is
   * unreachable: then the commit may or may not have happened, and each is told so, as it would be
   * alone.
   */
  async function runBatches(key: string, waiting: Queued[]) {
    while (waiting.length > 0) {
      const batch = waiting.splice(0, MAX_BATCH);
      if (batch.length === 1) {
        await runAlone(batch[0]!.work).then(batch[0]!.resolve, batch[0]!.reject);
        continue;
      }
      try {
        const results = await runAlone(async (tx) => {
          const done: unknown[] = [];
          for (const queued of batch) done.push(await queued.work(tx));
          return done;
        });
        batch.forEach((queued, i) => queued.resolve(results[i]));
      } catch (error) {
        if (error instanceof StorageUnavailableError) for (const queued of batch) queued.reject(error);
        else for (const queued of batch) await runAlone(queued.work).then(queued.resolve, queued.reject);
      }
    }
    batches.delete(key);
  }

  return {
    dialect: 'postgres',
    ...executor(pool),
    transaction<T>(work: (tx: Sql) => Promise<T>, options: { lazy?: boolean; batch?: string } = {}) {
      const key = options.batch;
      if (key === undefined) return runAlone(work, options.lazy);
      return new Promise<T>((resolve, reject) => {
        const queued = { work, resolve: resolve as (result: unknown) => void, reject };
        const waiting = batches.get(key);
        if (waiting) return void waiting.push(queued);
        const started = [queued];
        batches.set(key, started);
        void runBatches(key, started);
      });
    },
    close: () => pool.end(),
  };
}
