/** `hold_traces`: the trace a held MCP call was submitted in, while tracing is on (migration 044). */
import type { Sql } from './db.ts';

export async function saveHoldTrace(sql: Sql, holdId: string, traceparent: string): Promise<void> {
  await sql.run('INSERT INTO hold_traces (hold_id, traceparent) VALUES ($1, $2) ON CONFLICT DO NOTHING', [
    holdId,
    traceparent,
  ]);
}

/** The hold's trace, removed: its call runs once. */
export async function takeHoldTrace(sql: Sql, holdId: string): Promise<string | null> {
  const row = await sql.one<{ traceparent: string }>(
    'DELETE FROM hold_traces WHERE hold_id = $1 RETURNING traceparent',
    [holdId],
  );
  return row?.traceparent ?? null;
}
