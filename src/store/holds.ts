import type { Execution, Hold } from '../domain/hold.ts';
import { summarizeArguments } from '../domain/summary.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';
import { Where } from './where.ts';

const columns = `id, workspace_id AS "workspaceId", environment, connection, tool_name AS "toolName",
  agent_id AS "agentId", agent_label AS "agentLabel", requested_for AS "requestedFor", arguments, context, idempotency_key AS "idempotencyKey",
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

/** How long the summary of a hold's arguments kept for lists may be. */
export const LINE_SUMMARY_LENGTH = 160;

/** `submittedSeq`: the seq of the hold's `hold.submitted` entry, appended in the same transaction. */
export function insertHoldStatement(hold: Hold, submittedSeq: number | null = null): Statement {
  const args = JSON.stringify(hold.arguments);
  return {
    text: `INSERT INTO holds (id, workspace_id, environment, connection, tool_name, agent_id, agent_label, arguments, context,
       idempotency_key, fingerprint, submit_status, status, rule_name, approvers, approvals_required, approvals_received,
       created_at, expires_at, verdict, reason, channel, decided_at, mcp_server_id, call_key, arguments_summary,
       arguments_size, execution_status, execution_started_at, requested_for, submitted_seq)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
       $24, $25, $26, $27, $28, $29, $30, $31)`,
    params: [
      hold.id,
      hold.workspaceId,
      hold.environment,
      hold.connection,
      hold.toolName,
      hold.agentId,
      hold.agentLabel,
      args,
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
      summarizeArguments(hold.arguments, LINE_SUMMARY_LENGTH).text,
      args.length,
      // A new hold's execution is at most running: an allowed proxy call about to go upstream.
      hold.execution?.status ?? null,
      hold.execution?.startedAt ?? null,
      hold.requestedFor,
      submittedSeq,
    ],
  };
}

/** Where the hold's own entries are in its chain (services/hold-evidence.ts); null: none recorded. */
export const holdEvidenceSeqs = async (sql: Sql, workspaceId: string, holdId: string) => {
  const row = await sql.one<{ submittedSeq: number | null; approvedSeq: number | null }>(
    'SELECT submitted_seq AS "submittedSeq", approved_seq AS "approvedSeq" FROM holds WHERE workspace_id = $1 AND id = $2',
    [workspaceId, holdId],
  );
  const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return { submittedSeq: number(row?.submittedSeq), approvedSeq: number(row?.approvedSeq) };
};

/** The seqs of the hold's `hold.approval_recorded` entries of approvals so far (four eyes and more). */
export const approvalSeqsOf = async (sql: Sql, workspaceId: string, holdId: string): Promise<number[]> => {
  const row = await sql.one<{ seqs: string | null }>(
    'SELECT approval_seqs AS seqs FROM holds WHERE workspace_id = $1 AND id = $2',
    [workspaceId, holdId],
  );
  return row?.seqs ? (JSON.parse(row.seqs) as number[]) : [];
};

export const setApprovalSeqs = (sql: Sql, workspaceId: string, holdId: string, seqs: readonly number[]) =>
  sql.run('UPDATE holds SET approval_seqs = $3 WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    holdId,
    JSON.stringify(seqs),
  ]);

/** The seq of the `hold.approved` entry that approved the hold, in the decision's transaction. */
export const setApprovedSeq = (sql: Sql, workspaceId: string, holdId: string, seq: number) =>
  sql.run('UPDATE holds SET approved_seq = $3 WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    holdId,
    seq,
  ]);

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
    /** The member a delegate decided for. */
    onBehalfOf: string | null;
  },
): Promise<void> {
  await sql.run(
    `INSERT INTO hold_decisions (hold_id, member_id, verdict, comment, channel, decided_at, on_behalf_of)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      decision.holdId,
      decision.memberId,
      decision.verdict,
      decision.comment,
      decision.channel,
      decision.at,
      decision.onBehalfOf,
    ],
  );
}

/** Who decided the hold so far, and for whom (a delegate). */
export const listPastDecisions = (sql: Sql, holdId: string) =>
  sql.all<{ memberId: string; onBehalfOf: string | null }>(
    'SELECT member_id AS "memberId", on_behalf_of AS "onBehalfOf" FROM hold_decisions WHERE hold_id = $1',
    [holdId],
  );

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

export async function countRecentCalls(
  sql: Sql,
  workspaceId: string,
  scope: CallScope,
  since: number,
): Promise<number> {
  const params: unknown[] = [workspaceId];
  const count = recentCallsCount(scope, since, params);
  return (await sql.one<{ n: number }>(`SELECT ${count} AS n`, params))!.n;
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

/** A hold as a list shows it: everything but its arguments, which are summarized. */
export interface HoldLine extends Pick<
  Hold,
  | 'id'
  | 'environment'
  | 'connection'
  | 'toolName'
  | 'agentId'
  | 'agentLabel'
  | 'requestedFor'
  | 'status'
  | 'ruleName'
  | 'approvers'
  | 'approvalsRequired'
  | 'approvalsReceived'
  | 'createdAt'
  | 'expiresAt'
  | 'verdict'
  | 'channel'
  | 'decidedAt'
> {
  /** At most LINE_SUMMARY_LENGTH characters: `amount=4200, currency="EUR"`. */
  argumentsSummary: string;
  /** The arguments' length as JSON, in characters. */
  argumentsSize: number;
}

/** Holds stored before summaries were kept (migration 015) have theirs made on reading, while small. */
const LEGACY_SUMMARY_SOURCE = 64 * 1024;

/**
 * Nothing here reads `arguments`: on SQLite a column stored after a large value costs a walk through
 * its overflow pages, so these are all read from the covering index holds_pending_lines for the inbox.
 */
const lineColumns = `id, environment, connection, tool_name AS "toolName", agent_id AS "agentId",
  agent_label AS "agentLabel", requested_for AS "requestedFor", status, rule_name AS "ruleName", approvers, approvals_required AS "approvalsRequired",
  approvals_received AS "approvalsReceived", created_at AS "createdAt", expires_at AS "expiresAt", verdict,
  channel, decided_at AS "decidedAt", arguments_summary AS "argumentsSummary", arguments_size AS "argumentsSize"`;

type LineRow = Omit<HoldLine, 'approvers' | 'argumentsSummary'> & {
  approvers: string;
  argumentsSummary: string | null;
};

/** Rows as lines; the few stored before migration 015 get a summary made from their arguments. */
async function toLines(sql: Sql, rows: LineRow[]): Promise<HoldLine[]> {
  const legacy = rows.filter((row) => row.argumentsSummary === null).map((row) => row.id);
  const sources = new Map<string, string | null>();
  if (legacy.length > 0) {
    const found = await sql.all<{ id: string; source: string | null }>(
      `SELECT id, CASE WHEN length(arguments) <= ${LEGACY_SUMMARY_SOURCE} THEN arguments END AS source
       FROM holds WHERE id IN (${legacy.map((_, i) => `$${i + 1}`).join(', ')})`,
      legacy,
    );
    for (const { id, source } of found) sources.set(id, source);
  }
  return rows.map((row) => {
    const source = sources.get(row.id) ?? null;
    const argumentsSummary =
      row.argumentsSummary ??
      (source === null
        ? `${row.argumentsSize} characters of arguments`
        : summarizeArguments(JSON.parse(source) as Record<string, unknown>, LINE_SUMMARY_LENGTH).text);
    return { ...row, argumentsSummary, approvers: JSON.parse(row.approvers) as string[] };
  });
}

/** A workspace's pending holds as lines, soonest deadline first (index holds_pending_lines). */
export async function listPendingLines(sql: Sql, workspaceId: string, limit: number): Promise<HoldLine[]> {
  const rows = await sql.all<LineRow>(
    `SELECT ${lineColumns} FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return toLines(sql, rows);
}

/** These holds of the workspace as lines, in no particular order; unknown ids are left out. */
export async function listLinesById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<HoldLine[]> {
  if (ids.length === 0) return [];
  const rows = await sql.all<LineRow>(
    `SELECT ${lineColumns} FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return toLines(sql, rows);
}

/** The arguments of these holds of the workspace, parsed. */
export async function listArgumentsById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<Map<string, Record<string, unknown>>> {
  if (ids.length === 0) return new Map();
  const rows = await sql.all<{ id: string; arguments: string }>(
    `SELECT id, arguments FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return new Map(rows.map((row) => [row.id, JSON.parse(row.arguments) as Record<string, unknown>]));
}

/** The member decisions of these holds, oldest first. */
export async function listDecisionsOfHolds(
  sql: Sql,
  holdIds: readonly string[],
): Promise<(HoldDecisionRow & { holdId: string })[]> {
  if (holdIds.length === 0) return [];
  return sql.all(
    `SELECT d.hold_id AS "holdId", ${decisionColumns}
     FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
     WHERE d.hold_id IN (${holdIds.map((_, i) => `$${i + 1}`).join(', ')}) ORDER BY d.decided_at`,
    [...holdIds],
  );
}

/** Pending holds without their arguments: enough to tell whom each waits for (a count on every page). */
export async function listPendingApprovers(sql: Sql, workspaceId: string, limit: number) {
  const rows = await sql.all<{
    id: string;
    approvers: string;
    expiresAt: number | null;
    agentId: string;
    requestedFor: string | null;
  }>(
    `SELECT id, approvers, expires_at AS "expiresAt", agent_id AS "agentId", requested_for AS "requestedFor"
     FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return rows.map((row) => ({ ...row, approvers: JSON.parse(row.approvers) as string[] }));
}

export interface HoldFilters {
  status?: string;
  /**
   * A glob over the tool's name (`payments.*`: `*` any run of characters, `?` one, the rest literal).
   * listHolds reads it as a LIKE pattern that matches at least what `compileGlob` matches (SQLite's LIKE
   * ignores ASCII case), so the caller checks each line with `compileGlob`.
   */
  tool?: string;
  /** The agent's id or its label, exactly. */
  agent?: string;
  /** Created at or after (epoch ms). */
  from?: number;
  /** Created before (epoch ms). */
  to?: number;
}

/**
 * Up to `limit` holds of the workspace as lines (never their arguments), read away from a (createdAt, id)
 * cursor on index holds_by_workspace_created_id: `older` ones newest first (from the newest when
 * `from` is null), `newer` ones oldest first.
 */
export async function listHolds(
  sql: Sql,
  workspaceId: string,
  filters: HoldFilters,
  page: { direction: 'older' | 'newer'; from: { createdAt: number; id: string } | null },
  limit: number,
): Promise<HoldLine[]> {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filters.status) where.and('status = ?', filters.status);
  if (filters.tool) {
    // `\`, `%` and `_` are literal; `*` is `%`. A `?` is one UTF-16 unit for compileGlob but LIKE counts
    // characters, so a run of n `?` may be as few as n/2 characters (outside the BMP): `_…_%` then.
    const like = filters.tool.replace(/[\\%_*]|\?+/g, (part) =>
      part === '*'
        ? '%'
        : part[0] !== '?'
          ? `\\${part}`
          : part.length === 1
            ? '_'
            : `${'_'.repeat(Math.ceil(part.length / 2))}%`,
    );
    where.and(`tool_name LIKE ? ESCAPE '\\'`, like);
  }
  if (filters.agent) where.and('(agent_id = ? OR agent_label = ?)', filters.agent, filters.agent);
  if (filters.from !== undefined) where.and('created_at >= ?', filters.from);
  if (filters.to !== undefined) where.and('created_at < ?', filters.to);
  const newer = page.direction === 'newer';
  if (page.from) {
    const { createdAt, id } = page.from;
    const than = newer ? '>' : '<';
    where.and(`(created_at ${than} ? OR (created_at = ? AND id ${than} ?))`, createdAt, createdAt, id);
  }
  const order = newer ? 'created_at, id' : 'created_at DESC, id DESC';
  const rows = await sql.all<LineRow>(
    `SELECT ${lineColumns} FROM holds WHERE ${where} ORDER BY ${order} LIMIT ${where.param(limit)}`,
    where.params,
  );
  return toLines(sql, rows);
}

export interface HoldDecisionRow {
  memberId: string;
  name: string;
  email: string;
  verdict: string;
  comment: string | null;
  channel: string;
  decidedAt: number;
  /** The member a delegate decided for, by id and name; null when members decided themselves. */
  onBehalfOf: string | null;
  onBehalfOfName: string | null;
}

/** Hold decisions `d`, with their member `m` and the member `p` a delegate decided for. */
const decisionColumns = `d.member_id AS "memberId", m.name, m.email, d.verdict, d.comment, d.channel,
  d.decided_at AS "decidedAt", d.on_behalf_of AS "onBehalfOf", p.name AS "onBehalfOfName"`;

export const listHoldDecisions = (sql: Sql, holdId: string) =>
  sql.all<HoldDecisionRow>(
    `SELECT ${decisionColumns}
     FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
     WHERE d.hold_id = $1 ORDER BY d.decided_at`,
    [holdId],
  );

/** The decisions so far of a workspace's pending holds, by hold: who decided, and for whom. */
export async function pendingDecisions(
  sql: Sql,
  workspaceId: string,
): Promise<Map<string, { memberId: string; onBehalfOf: string | null }[]>> {
  const rows = await sql.all<{ holdId: string; memberId: string; onBehalfOf: string | null }>(
    `SELECT d.hold_id AS "holdId", d.member_id AS "memberId", d.on_behalf_of AS "onBehalfOf"
     FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
     WHERE h.workspace_id = $1 AND h.status = 'pending'`,
    [workspaceId],
  );
  const byHold = new Map<string, { memberId: string; onBehalfOf: string | null }[]>();
  for (const { holdId, ...decision } of rows) byHold.set(holdId, [...(byHold.get(holdId) ?? []), decision]);
  return byHold;
}

/** The newest proxy operation with this call key that a repeat joins (not expired, failed or auto-allowed). */
/**
 * An open proxy operation for a call key (the placeholder of its parameter): an identical call's hold
 * that has not ended without running (expired, failed, allowed) and was not withdrawn by its agent.
 */
export const openProxyHoldWhere = (callKey: string) =>
  `call_key = ${callKey} AND status NOT IN ('expired', 'failed', 'auto_allowed')
   AND NOT (status = 'rejected' AND channel = 'agent')`;

export async function findOpenProxyHold(
  sql: Sql,
  workspaceId: string,
  callKey: string,
): Promise<Hold | undefined> {
  const row = await sql.one<HoldRow>(
    `SELECT ${columns} FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$2')} ORDER BY created_at DESC LIMIT 1`,
    [workspaceId, callKey],
  );
  return toHold(row);
}

/** Upstream calls still marked running that started before `startedBefore` (index holds_running_executions). */
export const listStaleExecutions = (sql: Sql, startedBefore: number) =>
  sql.all<{ id: string; workspaceId: string }>(
    `SELECT id, workspace_id AS "workspaceId" FROM holds
     WHERE execution_status = 'running' AND execution_started_at < $1`,
    [startedBefore],
  );

/** Approved proxy holds nobody has started to run yet, oldest first. */

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
