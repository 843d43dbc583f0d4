/** `hold_traces`: the trace a held MCP call was submitted in, while tracing is on (migration 044). */
import type { Sql } from './db.ts';

export async function saveHoldTrace(
  sql: Sql,
  hold: { workspaceId: string; id: string },
  traceparent: string,
): Promise<void> {
  await sql.run(
    'INSERT INTO hold_traces (workspace_id, hold_id, traceparent) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    [hold.workspaceId, hold.id, traceparent],
  );
}

/** The hold's trace, removed: its call runs once. */
export async function takeHoldTrace(sql: Sql, workspaceId: string, holdId: string): Promise<string | null> {
  const row = await sql.one<{ traceparent: string }>(
    'DELETE FROM hold_traces WHERE workspace_id = $1 AND hold_id = $2 RETURNING traceparent',
    [workspaceId, holdId],
  );
  return row?.traceparent ?? null;
}
