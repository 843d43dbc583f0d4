/**
 * The storage port. Queries are written once, in PostgreSQL's dialect with `$n` parameters; the
 * SQLite adapter translates the little that differs. Times are integer milliseconds since the epoch
 * and JSON is stored as text, so both engines compare and sort them the same way.
 */
import type { Statement } from './statements.ts';

export type Row = Record<string, unknown>;

export interface Sql {
  all<T = Row>(text: string, params?: unknown[]): Promise<T[]>;
  one<T = Row>(text: string, params?: unknown[]): Promise<T | undefined>;
  /**
   * SQLite's: the rows as arrays of the SELECT's values, in its order. node:sqlite makes each row
   * object as a dictionary, slow to read, where a walk of the whole chain reads 100,000s of them.
   */
  arrays?(text: string, params?: unknown[]): Promise<unknown[][]>;
  /** Returns the number of rows changed. */
  run(text: string, params?: unknown[]): Promise<number>;
  /** Several statements, no parameters (migrations). */
  exec(text: string): Promise<void>;
  /**
   * In a transaction: runs `then` once the transaction has committed, never if it is rolled back
   * (what is remembered of a write must be what was written). Outside one: at once.
   */
  afterCommit(then: () => void): void;
  /**
   * PostgreSQL's: writes nobody reads the outcome of, one by one. In a transaction they are kept, to
   * be sent with what follows them (its next statement, or its COMMIT) in one round trip; an error in
   * them is thrown there. SQLite has none: `writeWithNext` (statements.ts) sends them at once.
   */
  writeWithNext?(statements: readonly Statement[]): Promise<void>;
}

export interface Db extends Sql {
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * One transaction: everything inside commits together or not at all, and is answered once it is
   * on disk. `lazy`: answered as soon as it is committed, and visible to readers, before it is on
   * disk (SQLite: it survives a crash of the process at once, of the machine with the next sync,
   * which follows right away; PostgreSQL: `synchronous_commit` off for it, on disk within a moment).
   * `batch`: transactions of one key (a workspace's submissions, which all wait for its chain lock)
   * run one at a time on this instance, and those that came while one ran go together in the next,
   * one after the other, with one commit (PostgreSQL; SQLite commits together what comes at once).
   */
  transaction<T>(work: (tx: Sql) => Promise<T>, options?: { lazy?: boolean; batch?: string }): Promise<T>;
  close(): Promise<void>;
}

/** Storage cannot be reached or cannot write (down, disk full): the API answers 503 `unavailable`. */
export class StorageUnavailableError extends Error {
  constructor(cause: unknown) {
    super('storage unavailable', { cause });
    this.name = 'StorageUnavailableError';
  }
}

/** A unique constraint refused a write: the caller lost a race and should read what won. */
export class UniqueViolationError extends Error {
  constructor(cause: unknown) {
    super('unique violation', { cause });
    this.name = 'UniqueViolationError';
  }
}

export async function ping(sql: Sql): Promise<void> {
  await sql.one('SELECT 1 AS ok');
}
