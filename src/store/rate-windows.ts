import { columns, count } from './columns.ts';
import type { Sql } from './db.ts';

const counted = columns({ count: count('count') });

/** Counts one hit in the window and answers the window's count so far. */
export async function hitRateWindow(sql: Sql, key: string, windowStart: number): Promise<number> {
  const row = await sql.one(
    `INSERT INTO rate_windows (key, window_start, count) VALUES ($1, $2, 1)
     ON CONFLICT (key, window_start) DO UPDATE SET count = rate_windows.count + 1 RETURNING count`,
    [key, windowStart],
  );
  return counted.decode(row!).count;
}

export const pruneRateWindows = (sql: Sql, before: number) =>
  sql.run('DELETE FROM rate_windows WHERE window_start < $1', [before]);
