/**
 * Writes that belong together, sent as one: on PostgreSQL one statement of data-modifying CTEs, so a
 * transaction that holds a lock pays one round trip for all of them; on SQLite, which has no such
 * CTEs and no round trips, one after another. The statements must not change the same row twice
 * (PostgreSQL would apply only one of the changes) and must not read what another one writes.
 */
import type { Sql } from './db.ts';

export interface Statement {
  text: string;
  params: unknown[];
}

export async function writeTogether(
  sql: Sql,
  dialect: 'sqlite' | 'postgres',
  statements: readonly Statement[],
): Promise<void> {
  if (statements.length === 0) return;
  if (dialect === 'sqlite' || statements.length === 1) {
    for (const { text, params } of statements) await sql.run(text, params);
    return;
  }
  const params: unknown[] = [];
  const parts = statements.map(({ text, params: own }, index) => {
    const offset = params.length;
    params.push(...own);
    return `w${index} AS (${text.replace(/\$(\d+)/g, (_, n: string) => `$${Number(n) + offset}`)})`;
  });
  await sql.run(`WITH ${parts.join(', ')} SELECT 1`, params);
}

/**
 * Writes nothing after them reads the outcome of (the last of a submission), statements of any kind
 * (a NOTIFY too): on PostgreSQL, in a transaction, sent with its next statement or its COMMIT, in the
 * same round trip; an error in them (a unique key another instance took) is thrown there, by the
 * transaction. On SQLite as `writeTogether`.
 */
export async function writeWithNext(
  sql: Sql,
  dialect: 'sqlite' | 'postgres',
  statements: readonly Statement[],
): Promise<void> {
  if (sql.writeWithNext) return sql.writeWithNext(statements);
  return writeTogether(sql, dialect, statements);
}
