import type { Execution, Hold } from '../domain/hold.ts';
import type { Sql } from './db.ts';

const columns = `id, workspace_id AS "workspaceId", environment, connection, tool_name AS "toolName",
  agent_id AS "agentId", agent_label AS "agentLabel", arguments, context, idempotency_key AS "idempotencyKey",
  fingerprint, submit_status AS "submitStatus", status, rule_name AS "ruleName", approvers,
  approvals_required AS "approvalsRequired", approvals_received AS "approvalsReceived", created_at AS "createdAt",
  expires_at AS "expiresAt", verdict, reason, channel, decided_at AS "decidedAt", mcp_server_id AS "mcpServerId",
  call_key AS "callKey", execution_status AS "executionStatus", execution_started_at AS "executionStartedAt",
  execution_completed_at AS "executionCompletedAt", execution_outcome AS "executionOutcome"`;

type HoldRow = Omit<Hold, 'arguments' | 'context' | 'approvers' | 'execution'> & {
  arguments: string;
  context: string;
  approvers: string;
  executionStatus: Execution['status'] | null;
  executionStartedAt: number | null;
  executionCompletedAt: number | null;
  executionOutcome: string | null;
};

function toHold(row: HoldRow | undefined): Hold | undefined {
  if (!row) return undefined;
  const { executionStatus, executionStartedAt, executionCompletedAt, executionOutcome, ...rest } = row;
  return {
    ...rest,
    arguments: JSON.parse(row.arguments),
    context: JSON.parse(row.context),
    approvers: JSON.parse(row.approvers),
    execution:
      executionStatus === null
        ? null
        : {
            status: executionStatus,
            startedAt: executionStartedAt!,
            completedAt: executionCompletedAt,
            outcome: executionOutcome === null ? null : JSON.parse(executionOutcome),
          },
  };
}

export async function insertHold(sql: Sql, hold: Hold): Promise<void> {
  await sql.run(
    `INSERT INTO holds (id, workspace_id, environment, connection, tool_name, agent_id, agent_label, arguments, context,
       idempotency_key, fingerprint, submit_status, status, rule_name, approvers, approvals_required, approvals_received,
       created_at, expires_at, verdict, reason, channel, decided_at, mcp_server_id, call_key)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
       $24, $25)`,
    [
      hold.id,
      hold.workspaceId,
      hold.environment,
      hold.connection,
      hold.toolName,
      hold.agentId,
      hold.agentLabel,
      JSON.stringify(hold.arguments),
      JSON.stringify(hold.context),
      hold.idempotencyKey,
      hold.fingerprint,
      hold.submitStatus,
      hold.status,
      hold.ruleName,
      JSON.stringify(hold.approvers),
      hold.approvalsRequired,
      hold.approvalsReceived,
      hold.createdAt,
      hold.expiresAt,
      hold.verdict,
      hold.reason,
      hold.channel,
      hold.decidedAt,
      hold.mcpServerId,
      hold.callKey,
    ],
  );
}

/** `lock` takes a row lock on PostgreSQL, for a read that is followed by a state change. */
export async function findHold(
  sql: Sql,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<Hold | undefined> {
  const row = await sql.one<HoldRow>(
    `SELECT ${columns} FROM holds WHERE id = $1 AND workspace_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [id, workspaceId],
  );
  return toHold(row);
}

/** For the public status page, which knows no workspace: the reference alone is the secret. */
export async function findHoldByReference(sql: Sql, id: string): Promise<Hold | undefined> {
  return toHold(await sql.one<HoldRow>(`SELECT ${columns} FROM holds WHERE id = $1`, [id]));
}

export async function findHoldByIdempotencyKey(
  sql: Sql,
  workspaceId: string,
  key: string,
): Promise<Hold | undefined> {
  const row = await sql.one<HoldRow>(
    `SELECT ${columns} FROM holds WHERE workspace_id = $1 AND idempotency_key = $2`,
    [workspaceId, key],
  );
  return toHold(row);
}

/** Writes the mutable part of a hold: its status, approvals, decision and execution. */
export async function updateHoldState(sql: Sql, hold: Hold): Promise<void> {
  const execution = hold.execution;
  await sql.run(
    `UPDATE holds SET status = $2, approvals_received = $3, verdict = $4, reason = $5, channel = $6, decided_at = $7,
       execution_status = $8, execution_started_at = $9, execution_completed_at = $10, execution_outcome = $11
     WHERE id = $1`,
    [
      hold.id,
      hold.status,
      hold.approvalsReceived,
      hold.verdict,
      hold.reason,
      hold.channel,
      hold.decidedAt,
      execution?.status ?? null,
      execution?.startedAt ?? null,
      execution?.completedAt ?? null,
      execution ? JSON.stringify(execution.outcome) : null,
    ],
  );
}

export const countHoldsSince = async (sql: Sql, workspaceId: string, since: number) =>
  (await sql.one<{ n: number }>(
    'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1 AND created_at >= $2',
    [workspaceId, since],
  ))!.n;

/** Pending holds whose deadline has passed, oldest deadline first. */
export const listOverdueHolds = (sql: Sql, now: number, limit: number) =>
  sql.all<{ id: string; workspaceId: string }>(
    `SELECT id, workspace_id AS "workspaceId" FROM holds WHERE status = 'pending' AND expires_at <= $1
     ORDER BY expires_at LIMIT $2`,
    [now, limit],
  );

export const nextDeadline = async (sql: Sql) =>
  (await sql.one<{ at: number | null }>(`SELECT MIN(expires_at) AS at FROM holds WHERE status = 'pending'`))
    ?.at ?? null;

export async function insertHoldDecision(
  sql: Sql,
  decision: {
    holdId: string;
    memberId: string;
    verdict: string;
    comment: string | null;
    channel: string;
    at: number;
  },
): Promise<void> {
  await sql.run(
    'INSERT INTO hold_decisions (hold_id, member_id, verdict, comment, channel, decided_at) VALUES ($1, $2, $3, $4, $5, $6)',
    [decision.holdId, decision.memberId, decision.verdict, decision.comment, decision.channel, decision.at],
  );
}

export const hasDecided = async (sql: Sql, holdId: string, memberId: string) =>
  (await sql.one('SELECT 1 AS found FROM hold_decisions WHERE hold_id = $1 AND member_id = $2', [
    holdId,
    memberId,
  ])) !== undefined;

/** Calls of the workspace after `since` (epoch ms), narrowed to a connection and tool and/or an agent. */
export async function countRecentCalls(
  sql: Sql,
  workspaceId: string,
  scope: { connection: string; toolName: string | null; agentId: string | null },
  since: number,
): Promise<number> {
  const params: unknown[] = [workspaceId, since];
  let filter = '';
  if (scope.toolName !== null) {
    params.push(scope.connection, scope.toolName);
    filter += ` AND connection = $${params.length - 1} AND tool_name = $${params.length}`;
  }
  if (scope.agentId !== null) {
    params.push(scope.agentId);
    filter += ` AND agent_id = $${params.length}`;
  }
  const row = await sql.one<{ n: number }>(
    `SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1 AND created_at > $2${filter}`,
    params,
  );
  return row!.n;
}

export interface ReplayedCall {
  id: string;
  connection: string;
  toolName: string;
  agentId: string;
  arguments: Record<string, unknown>;
  createdAt: number;
  submitStatus: Hold['submitStatus'];
  ruleName: string | null;
  approvalsRequired: number;
  expiresAt: number | null;
}

/** One page of a workspace's calls in [from, to), oldest first, after the (createdAt, id) cursor. */
export async function listCallsForReplay(
  sql: Sql,
  workspaceId: string,
  range: { from: number; to: number },
  after: { createdAt: number; id: string } | null,
  limit: number,
): Promise<ReplayedCall[]> {
  const rows = await sql.all<Omit<ReplayedCall, 'arguments'> & { arguments: string }>(
    `SELECT id, connection, tool_name AS "toolName", agent_id AS "agentId", arguments, created_at AS "createdAt",
       submit_status AS "submitStatus", rule_name AS "ruleName", approvals_required AS "approvalsRequired",
       expires_at AS "expiresAt"
     FROM holds WHERE workspace_id = $1 AND created_at >= $2 AND created_at < $3
       AND (created_at > $4 OR (created_at = $4 AND id > $5))
     ORDER BY created_at, id LIMIT $6`,
    [workspaceId, range.from, range.to, after?.createdAt ?? -1, after?.id ?? '', limit],
  );
  return rows.map((row) => ({ ...row, arguments: JSON.parse(row.arguments) }));
}

export async function listPendingHolds(sql: Sql, workspaceId: string, limit: number): Promise<Hold[]> {
  const rows = await sql.all<HoldRow>(
    `SELECT ${columns} FROM holds WHERE workspace_id = $1 AND status = 'pending' ORDER BY created_at DESC, id DESC LIMIT $2`,
    [workspaceId, limit],
  );
  return rows.map((row) => toHold(row)!);
}

/** Pending holds without their arguments: enough to tell whom each waits for (a count on every page). */
export async function listPendingApprovers(sql: Sql, workspaceId: string, limit: number) {
  const rows = await sql.all<{ id: string; approvers: string; expiresAt: number | null }>(
    `SELECT id, approvers, expires_at AS "expiresAt" FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY created_at DESC, id DESC LIMIT $2`,
    [workspaceId, limit],
  );
  return rows.map((row) => ({ ...row, approvers: JSON.parse(row.approvers) as string[] }));
}

export interface HoldFilters {
  status?: string;
  tool?: string;
  agent?: string;
  from?: number;
  to?: number;
}

/** Newest first; `before` is the (createdAt, id) of the last hold of the previous page. */
export async function listHolds(
  sql: Sql,
  workspaceId: string,
  filters: HoldFilters,
  before: { createdAt: number; id: string } | null,
  limit: number,
): Promise<Hold[]> {
  const params: unknown[] = [workspaceId];
  const where = ['workspace_id = $1'];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace('?', `$${params.length}`));
  };
  if (filters.status) add('status = ?', filters.status);
  if (filters.tool) add('tool_name = ?', filters.tool);
  if (filters.agent) add('agent_id = ?', filters.agent);
  if (filters.from !== undefined) add('created_at >= ?', filters.from);
  if (filters.to !== undefined) add('created_at < ?', filters.to);
  if (before) {
    params.push(before.createdAt, before.id);
    where.push(
      `(created_at < $${params.length - 1} OR (created_at = $${params.length - 1} AND id < $${params.length}))`,
    );
  }
  params.push(limit);
  const rows = await sql.all<HoldRow>(
    `SELECT ${columns} FROM holds WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map((row) => toHold(row)!);
}

export interface HoldDecisionRow {
  memberId: string;
  name: string;
  email: string;
  verdict: string;
  comment: string | null;
  channel: string;
  decidedAt: number;
}

export const listHoldDecisions = (sql: Sql, holdId: string) =>
  sql.all<HoldDecisionRow>(
    `SELECT d.member_id AS "memberId", m.name, m.email, d.verdict, d.comment, d.channel, d.decided_at AS "decidedAt"
     FROM hold_decisions d JOIN members m ON m.id = d.member_id WHERE d.hold_id = $1 ORDER BY d.decided_at`,
    [holdId],
  );

/** Which of a workspace's pending holds this member has already decided. */
export async function pendingDecidedBy(
  sql: Sql,
  workspaceId: string,
  memberId: string,
): Promise<Set<string>> {
  const rows = await sql.all<{ id: string }>(
    `SELECT d.hold_id AS id FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
     WHERE h.workspace_id = $1 AND h.status = 'pending' AND d.member_id = $2`,
    [workspaceId, memberId],
  );
  return new Set(rows.map((row) => row.id));
}

/** The newest proxy operation with this call key that a repeat joins (not expired, failed or auto-allowed). */
export async function findOpenProxyHold(
  sql: Sql,
  workspaceId: string,
  callKey: string,
): Promise<Hold | undefined> {
  const row = await sql.one<HoldRow>(
    `SELECT ${columns} FROM holds WHERE workspace_id = $1 AND call_key = $2
       AND status NOT IN ('expired', 'failed', 'auto_allowed') ORDER BY created_at DESC LIMIT 1`,
    [workspaceId, callKey],
  );
  return toHold(row);
}

/** Approved proxy holds nobody has started to run yet, oldest first. */
/** Upstream calls still marked running that started before `startedBefore` (index holds_running_executions). */
export const listStaleExecutions = (sql: Sql, startedBefore: number) =>
  sql.all<{ id: string; workspaceId: string }>(
    `SELECT id, workspace_id AS "workspaceId" FROM holds
     WHERE status = 'approved' AND execution_status = 'running' AND execution_started_at < $1`,
    [startedBefore],
  );

export const listHoldsToExecute = (sql: Sql, limit: number) =>
  sql.all<{ id: string; workspaceId: string }>(
    `SELECT id, workspace_id AS "workspaceId" FROM holds
     WHERE status = 'approved' AND mcp_server_id IS NOT NULL AND execution_status IS NULL ORDER BY created_at LIMIT $1`,
    [limit],
  );

/** A tool's pending holds, oldest first (deciding them when the tool is classified). */
export const pendingHoldIdsOfTool = (
  sql: Sql,
  workspaceId: string,
  tool: { connection: string; name: string },
  limit: number,
) =>
  sql.all<{ id: string }>(
    `SELECT id FROM holds WHERE workspace_id = $1 AND status = 'pending' AND connection = $2 AND tool_name = $3
     ORDER BY created_at, id LIMIT $4`,
    [workspaceId, tool.connection, tool.name, limit],
  );
