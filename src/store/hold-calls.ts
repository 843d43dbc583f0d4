/** The holds as the history of a workspace's calls: counts for frequency rules, pages for a replay. */
import { columns, integer, type RecordOf } from './columns.ts';
import type { Sql } from './db.ts';
import { holds } from './holds.ts';
import { Where } from './where.ts';

/** Calls of the workspace after `since` (epoch ms), narrowed to a connection and tool and/or an agent. */
export interface CallScope {
  connection: string;
  toolName: string | null;
  agentId: string | null;
}

/**
 * The count of a workspace's calls in a frequency scope since `since`, as a subquery whose parameters
 * are appended to `params` (`$1` is the workspace).
 */
export function recentCallsCount(scope: CallScope, since: number, params: unknown[]): string {
  const where = new Where('workspace_id = $1', params).and('created_at > ?', since);
  if (scope.toolName !== null)
    where.and('connection = ? AND tool_name = ?', scope.connection, scope.toolName);
  if (scope.agentId !== null) where.and('agent_id = ?', scope.agentId);
  return `(SELECT COUNT(*) FROM holds WHERE ${where})`;
}

const callCount = columns({ n: integer('n') });

export async function countRecentCalls(
  sql: Sql,
  workspaceId: string,
  scope: CallScope,
  since: number,
): Promise<number> {
  const params: unknown[] = [workspaceId];
  const count = recentCallsCount(scope, since, params);
  return callCount.decode((await sql.one(`SELECT ${count} AS n`, params))!).n;
}

const replayedCalls = holds.pick(
  'id',
  'connection',
  'toolName',
  'agentId',
  'arguments',
  'createdAt',
  'submitStatus',
  'ruleName',
  'approvalsRequired',
  'expiresAt',
);

export type ReplayedCall = RecordOf<typeof replayedCalls.fields>;

/** One page of a workspace's calls in [from, to), oldest first, after the (createdAt, id) cursor. */
export async function listCallsForReplay(
  sql: Sql,
  workspaceId: string,
  range: { from: number; to: number },
  after: { createdAt: number; id: string } | null,
  limit: number,
): Promise<ReplayedCall[]> {
  const rows = await sql.all(
    `SELECT ${replayedCalls.select()}
     FROM holds WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3
       AND (created_at > $4 OR (created_at = $4 AND id > $5))
     ORDER BY created_at, id LIMIT $6`,
    [workspaceId, range.from, range.to, after?.createdAt ?? -1, after?.id ?? '', limit],
  );
  return replayedCalls.decodeAll(rows);
}
