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
  return {
    dialect: 'postgres',
    ...executor(pool),
    async transaction(work) {
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
        await tx.exec('BEGIN');
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
    },
    close: () => pool.end(),
  };
}
