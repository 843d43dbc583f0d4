/** Holds found by their state for the jobs that move them on: deadlines, executions, a classified tool. */
import { columns, integer, nullable } from './columns.ts';
import type { Sql } from './db.ts';
import { holds } from './holds.ts';

const holdRefs = holds.pick('id', 'workspaceId');

/** Pending holds whose deadline has passed, oldest deadline first. */
export const listOverdueHolds = async (sql: Sql, now: number, limit: number) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds WHERE status = 'pending' AND expires_at <= $1
       ORDER BY expires_at LIMIT $2`,
      [now, limit],
    ),
  );

const deadline = columns({ at: nullable(integer('at')) });

export const nextDeadline = async (sql: Sql) => {
  const row = await sql.one(`SELECT MIN(expires_at) AS at FROM holds WHERE status = 'pending'`);
  return row ? deadline.decode(row).at : null;
};

/** Upstream calls still marked running that started before `startedBefore` (index holds_running_executions). */
export const listStaleExecutions = async (sql: Sql, startedBefore: number) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds
       WHERE execution_status = 'running' AND execution_started_at < $1`,
      [startedBefore],
    ),
  );

/**
 * Approved proxy holds nobody has started to run yet, oldest first; none of a frozen workspace (they
 * wait for it to be unfrozen, and must not keep others' calls waiting behind them). `workspaceId`: of
 * that workspace only.
 */
export const listHoldsToExecute = async (sql: Sql, limit: number, workspaceId?: string) =>
  holdRefs.decodeAll(
    await sql.all(
      `SELECT ${holdRefs.select()} FROM holds
       WHERE status = 'approved' AND mcp_server_id IS NOT NULL AND execution_status IS NULL
         AND workspace_id NOT IN (SELECT id FROM workspaces WHERE frozen_at IS NOT NULL)
         ${workspaceId === undefined ? '' : 'AND workspace_id = $2'}
       ORDER BY created_at LIMIT $1`,
      workspaceId === undefined ? [limit] : [limit, workspaceId],
    ),
  );

const holdOnlyIds = holds.pick('id');

/** A tool's pending holds, oldest first (deciding them when the tool is classified). */
export const pendingHoldIdsOfTool = async (
  sql: Sql,
  workspaceId: string,
  tool: { connection: string; name: string },
  limit: number,
) =>
  holdOnlyIds.decodeAll(
    await sql.all(
      `SELECT ${holdOnlyIds.select()} FROM holds WHERE workspace_id = $1 AND status = 'pending' AND connection = $2 AND tool_name = $3
       ORDER BY created_at, id LIMIT $4`,
      [workspaceId, tool.connection, tool.name, limit],
    ),
  );
