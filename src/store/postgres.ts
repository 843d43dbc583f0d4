/** PostgreSQL adapter (pg): for scale-out, several instances on one database. */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { type Db, type Sql, StorageUnavailableError, UniqueViolationError } from './db.ts';
import type { Statement } from './statements.ts';

// int8 (counts, epoch milliseconds) and numeric as JS numbers: every value we store fits in 2^53.
const toNumber = (value: string) => Number(value);
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 || oid === 1700 ? toNumber : pg.types.getTypeParser(oid, format)) as never,
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
const CONNECT_TIMEOUT_MS = 5_000;
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

type Query = (text: string, params?: unknown[]) => Promise<pg.QueryResult>;

/** A statement on the pool (any free connection) or on one connection. */
const sender =
  (client: pg.Pool | pg.PoolClient): Query =>
  async (text, params = []) => {
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

/**
 * A text as pg.escapeLiteral writes it (the same characters), with native replaces instead of its
 * loop of one concatenation per character: a hold's evidence is hundreds of characters.
 */
function escapeLiteral(text: string): string {
  const quoted = `'${text.replaceAll("'", "''")}'`;
  return text.includes('\\') ? ` E${quoted.replaceAll('\\', '\\\\')}` : quoted;
}

/**
 * A parameter written into the statement's text, as the text pg would send for it and untyped, as a
 * parameter is, so PostgreSQL reads it alike. Parameters are what SQLite binds too: null, numbers,
 * text, booleans and bytes.
 */
function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof Uint8Array) return escapeLiteral(`\\x${Buffer.from(value).toString('hex')}`);
  if (typeof value === 'object') throw new TypeError('a statement parameter must be a value, not an object');
  return escapeLiteral(String(value as string | number | bigint | boolean));
}

/**
 * A statement's text cut at its parameters: the text between them at even places, a parameter's
 * index (from 0) at odd ones. Kept for the texts that are prepared too (few, each used often).
 */
const textPieces = new Map<string, (string | number)[]>();
function piecesOf(text: string, params: unknown[]) {
  let pieces = textPieces.get(text);
  if (!pieces) {
    pieces = text
      .trim()
      .replace(/;$/, '')
      .split(/\$(\d+)/)
      .map((piece, i) => (i % 2 === 1 ? Number(piece) - 1 : piece));
    if (params.length <= PREPARED_PARAMS_AT_MOST) textPieces.set(text, pieces);
  }
  return pieces;
}

/** A statement with its parameters written in, to be sent with others in one simple query. */
function inline(text: string, params: unknown[] = []) {
  if (params.length === 0) return text.trim().replace(/;$/, '');
  let written = '';
  for (const piece of piecesOf(text, params))
    written += typeof piece === 'number' ? literal(params[piece]) : piece;
  return written;
}

/** The last statement's result of a simple query that held several. */
const lastOf = (result: pg.QueryResult | pg.QueryResult[]) =>
  Array.isArray(result) ? result.at(-1)! : result;

/** A statement issued in a transaction, waiting to be sent. */
interface Issued {
  text: string;
  params?: unknown[];
  resolve: (result: pg.QueryResult) => void;
  reject: (error: unknown) => void;
}

/**
 * A transaction's connection runs one round trip at a time: statements wait their turn here, in order,
 * as do its COMMIT and ROLLBACK, rather than in the driver, which pg 9 no longer does. What is sent
 * together, in one simple query with the parameters written in: its BEGIN with its first statement;
 * writes kept (`writeWithNext`) with the next statement or the COMMIT; statements issued together
 * (reads in a Promise.all) with each other. A submission's BEGIN goes with its locked read, its writes
 * with its COMMIT, a pending hold's approvers with its digest windows.
 */
function transactionOn(client: pg.PoolClient, lazy: boolean) {
  const send = sender(client);
  // Lazy: committed without waiting for the disk. One statement each: one result each.
  const begin = lazy ? ['BEGIN', 'SET LOCAL synchronous_commit TO OFF'] : ['BEGIN'];
  /** What goes before the next statement sent: the BEGIN until one is, then writes kept. */
  let before = [...begin];
  let begun = false;
  let previous: Promise<unknown> = Promise.resolve();
  /** Statements issued since the last turn was queued: they go in one round trip, at their turn. */
  let gathering: Issued[] | null = null;
  const inTurn = <T>(work: () => Promise<T>) => {
    gathering = null;
    const next = previous.then(work);
    previous = next.catch(() => undefined);
    return next;
  };
  /** `issued` with everything that goes before them, in one round trip; one alone is prepared. */
  const sendTogether = async (issued: Issued[]) => {
    if (before.length === 0 && issued.length === 1) return [await send(issued[0]!.text, issued[0]!.params)];
    const texts = [...before, ...issued.map(({ text, params }) => inline(text, params))];
    const skip = before.length;
    before = [];
    begun = true;
    const results = await sendSimple(client, texts.join(';\n'));
    // Several statements answer one result each; a text of several (exec) is sent alone.
    return issued.length === 1 ? [lastOf(results)] : (results as pg.QueryResult[]).slice(skip);
  };
  const query: Query = (text, params) =>
    new Promise((resolve, reject) => {
      if (gathering) return void gathering.push({ text, params, resolve, reject });
      const issued: Issued[] = [{ text, params, resolve, reject }];
      void inTurn(async () => {
        if (gathering === issued) gathering = null;
        try {
          const results = await sendTogether(issued);
          issued.forEach((one, i) => one.resolve(results[i]!));
        } catch (error) {
          for (const one of issued) one.reject(error);
        }
      });
      gathering = issued;
    });
  return {
    query,
    writeWithNext: (statements: readonly Statement[]) =>
      inTurn(async () => {
        before.push(...statements.map(({ text, params }) => inline(text, params)));
      }),
    /** COMMIT's result; none when nothing was sent (a transaction that did nothing). */
    commit: () =>
      inTurn(async () => {
        if (!begun && before.length === begin.length) return undefined;
        const ending = [...before, 'COMMIT'].join(';\n');
        before = [];
        return lastOf(await sendSimple(client, ending));
      }),
    rollback: () => inTurn(async () => (begun ? send('ROLLBACK') : undefined)),
  };
}

/** Several statements as one simple query (no parameters): one result each. */
async function sendSimple(client: pg.PoolClient, text: string) {
  try {
    return (await client.query(text)) as pg.QueryResult | pg.QueryResult[];
  } catch (error) {
    throw mapError(error);
  }
}

function executor(
  query: Query,
  afterCommit: Sql['afterCommit'] = (then) => then(),
  // Outside a transaction there is nothing to send them with: at once, one by one.
  writeWithNext: Sql['writeWithNext'] = async (statements) => {
    for (const { text, params } of statements) await query(text, params);
  },
): Sql {
  return {
    afterCommit,
    writeWithNext,
    all: async <T>(text: string, params?: unknown[]) => (await query(text, params)).rows as T[],
    one: async <T>(text: string, params?: unknown[]) => (await query(text, params)).rows[0] as T | undefined,
    run: async (text, params) => (await query(text, params)).rowCount ?? 0,
    exec: async (text) => {
      await query(text);
    },
  };
}

/** One transaction on a connection of its own. */
async function runAlone<T>(pool: pg.Pool, work: (tx: Sql) => Promise<T>, lazy = false): Promise<T> {
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
  const transaction = transactionOn(client, lazy);
  try {
    const committed: (() => void)[] = [];
    const result = await work(
      executor(transaction.query, (then) => committed.push(then), transaction.writeWithNext),
    );
    // A statement that failed inside (and was caught there) leaves an aborted transaction, which
    // COMMIT ends as a ROLLBACK without an error: never answered as committed.
    const ended = await transaction.commit();
    if (ended && ended.command !== 'COMMIT')
      throw new Error('the transaction was rolled back: a statement in it failed');
    client.off('error', ignore);
    client.release();
    for (const then of committed) then();
    return result;
  } catch (error) {
    await transaction.rollback().catch(() => undefined);
    client.off('error', ignore);
    client.release(error instanceof StorageUnavailableError);
    throw error;
  }
}

/** A transaction waiting behind its batch key. */
interface Queued {
  work: (tx: Sql) => Promise<unknown>;
  lazy: boolean;
  /** When it was queued (a transaction of its own waits for a connection at most CONNECT_TIMEOUT_MS). */
  since: number;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * The port's `transaction` on `pool`: alone, or with a batch key in a queue per key whose transactions
 * share one commit.
 */
function transactions(pool: pg.Pool): Db['transaction'] {
  /** Per batch key, the transactions waiting for the one running. */
  const batches = new Map<string, Queued[]>();

  const runQueued = (queued: Queued) =>
    runAlone(pool, queued.work, queued.lazy).then(queued.resolve, queued.reject);

  /**
   * Runs `batch` in one transaction, one after the other (each sees the writes of those before it),
   * one commit for all. When one throws, all is rolled back: those before it run together again, it
   * runs alone and gets its own answer, and those after it go back to the front of the queue. When
   * the database is unreachable, the commit may or may not have happened: each is told so, as it
   * would be alone, and so is every one still waiting (none of them has run).
   */
  async function runTogether(batch: Queued[], waiting: Queued[]): Promise<void> {
    if (batch.length === 0) return;
    let failed = -1;
    try {
      const work = async (tx: Sql) => {
        const done: unknown[] = [];
        for (const [i, queued] of batch.entries()) {
          failed = i;
          done.push(await queued.work(tx));
        }
        failed = -1;
        return done;
      };
      const results = await runAlone(
        pool,
        work,
        batch.every((queued) => queued.lazy),
      );
      batch.forEach((queued, i) => queued.resolve(results[i]));
    } catch (error) {
      if (error instanceof StorageUnavailableError) {
        for (const queued of [...batch, ...waiting.splice(0)]) queued.reject(error);
      } else if (batch.length === 1) {
        batch[0]!.reject(error);
      } else if (failed >= 0) {
        waiting.unshift(...batch.slice(failed + 1));
        await runTogether(batch.slice(0, failed), waiting);
        await runQueued(batch[failed]!);
      } else {
        // The commit itself was refused: each alone.
        for (const queued of batch) await runQueued(queued);
      }
    }
  }

  /** Runs the key's transactions until none waits; one that waited too long is told the database is unavailable. */
  async function runBatches(key: string, waiting: Queued[]) {
    while (waiting.length > 0) {
      const now = Date.now();
      for (let i = waiting.length - 1; i >= 0; i--) {
        if (now - waiting[i]!.since <= CONNECT_TIMEOUT_MS) continue;
        const [late] = waiting.splice(i, 1);
        late!.reject(new StorageUnavailableError(new Error('waited too long behind the same batch key')));
      }
      await runTogether(waiting.splice(0, MAX_BATCH), waiting);
    }
    batches.delete(key);
  }

  return function transaction<T>(
    work: (tx: Sql) => Promise<T>,
    options: { lazy?: boolean; batch?: string } = {},
  ) {
    const key = options.batch;
    if (key === undefined) return runAlone(pool, work, options.lazy);
    return new Promise<T>((resolve, reject) => {
      const lazy = options.lazy === true;
      const queued = {
        work,
        lazy,
        since: Date.now(),
        resolve: resolve as (result: unknown) => void,
        reject,
      };
      const waiting = batches.get(key);
      if (waiting) return void waiting.push(queued);
      const started = [queued];
      batches.set(key, started);
      void runBatches(key, started);
    });
  };
}

export function openPostgres(url: string, options: { max?: number } = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 10,
    types,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client whose server went away must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  return {
    dialect: 'postgres',
    ...executor(sender(pool)),
    transaction: transactions(pool),
    close: () => pool.end(),
  };
}
