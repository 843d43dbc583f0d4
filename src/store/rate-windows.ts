import { columns, count } from './columns.ts';
import type { Sql } from './db.ts';

const counted = columns({ count: count('count') });

/** Adds `by` hits to the window and answers the window's count so far (`by` 0 reads it). */
export async function hitRateWindow(sql: Sql, key: string, windowStart: number, by = 1): Promise<number> {
  const row = await sql.one(
    `INSERT INTO rate_windows (key, window_start, count) VALUES ($1, $2, $3)
     ON CONFLICT (key, window_start) DO UPDATE SET count = rate_windows.count + $3 RETURNING count`,
    [key, windowStart, by],
  );
  return counted.decode(row!).count;
}

export const pruneRateWindows = (sql: Sql, before: number) =>
  sql.run('DELETE FROM rate_windows WHERE window_start < $1', [before]);
