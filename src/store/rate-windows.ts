import { columns, count } from './columns.ts';
import type { Sql } from './db.ts';

const counted = columns({ count: count('count') });

/**
 * Counts hits in windows: `rows` answers each window's key, start and hits (VALUES, or a query), `by`
 * is the hits again (a parameter, or the number). Returns each window's count so far.
 */
export const countHits = (rows: string, by: string) =>
  `INSERT INTO rate_windows (key, window_start, count) ${rows}
     ON CONFLICT (key, window_start) DO UPDATE SET count = rate_windows.count + ${by} RETURNING count`;

/** Adds `by` hits to the window and answers the window's count so far (`by` 0 reads it). */
export async function hitRateWindow(sql: Sql, key: string, windowStart: number, by = 1): Promise<number> {
  const row = await sql.one(countHits('VALUES ($1, $2, $3)', '$3'), [key, windowStart, by]);
  return counted.decode(row!).count;
}

export const pruneRateWindows = (sql: Sql, before: number) =>
  sql.run('DELETE FROM rate_windows WHERE window_start < $1', [before]);
