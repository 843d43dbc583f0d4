/** The `holds` table: its column map, and a hold read, written and found by its keys. */
import type {
  DecisionChannel,
  Environment,
  Execution,
  Hold,
  HoldStatus,
  SubmitStatus,
  Verdict,
} from '../domain/hold.ts';
import { decidingText } from '../domain/deciding-values.ts';
import { columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import type { Statement } from './statements.ts';

/** Every column of `holds`. */
export const holds = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  environment: text<Environment>('environment'),
  connection: text('connection'),
  toolName: text('tool_name'),
  agentId: text('agent_id'),
  agentLabel: nullable(text('agent_label')),
  requestedFor: nullable(text('requested_for')),
  arguments: json<Record<string, unknown>>('arguments'),
  changedArguments: nullable(json<Record<string, unknown>>('changed_arguments')),
  context: json<Record<string, unknown>>('context'),
  idempotencyKey: text('idempotency_key'),
  fingerprint: text('fingerprint'),
  submitStatus: text<SubmitStatus>('submit_status'),
  status: text<HoldStatus>('status'),
  ruleName: nullable(text('rule_name')),
  approvers: json<string[]>('approvers'),
  approvalsRequired: integer('approvals_required'),
  approvalsReceived: integer('approvals_received'),
  createdAt: integer('created_at'),
  expiresAt: nullable(integer('expires_at')),
  verdict: nullable(text<Verdict>('verdict')),
  reason: nullable(text('reason')),
  channel: nullable(text<DecisionChannel>('channel')),
  decidedAt: nullable(integer('decided_at')),
  mcpServerId: nullable(text('mcp_server_id')),
  callKey: nullable(text('call_key')),
  executionStatus: nullable(text<Execution['status']>('execution_status')),
  executionStartedAt: nullable(integer('execution_started_at')),
  executionCompletedAt: nullable(integer('execution_completed_at')),
  executionOutcome: nullable(json<unknown>('execution_outcome')),
  /** Null for holds stored before migration 015. */
  argumentsSummary: nullable(text('arguments_summary')),
  /** The arguments' length as JSON, in characters. */
  argumentsSize: integer('arguments_size'),
  /** Where the hold's own entries are in its chain (services/hold-evidence.ts); null: none recorded. */
  submittedSeq: nullable(integer('submitted_seq')),
  approvedSeq: nullable(integer('approved_seq')),
  approvalSeqs: nullable(json<number[]>('approval_seqs')),
});

/** What a Hold is read from: its record, not what lists and its evidence keep of it. */
const holdColumns = holds.omit(
  'argumentsSummary',
  'argumentsSize',
  'submittedSeq',
  'approvedSeq',
  'approvalSeqs',
);

function toHold(row: Row | undefined): Hold | undefined {
  if (!row) return undefined;
  const { executionStatus, executionStartedAt, executionCompletedAt, executionOutcome, ...rest } =
    holdColumns.decode(row);
  return {
    ...rest,
    execution:
      executionStatus === null
        ? null
        : {
            status: executionStatus,
            startedAt: executionStartedAt!,
            completedAt: executionCompletedAt,
            outcome: executionOutcome,
          },
  };
}

/** A hold's execution as its four columns, all null before it starts. */
const executionColumns = (execution: Execution | null) => ({
  executionStatus: execution?.status ?? null,
  executionStartedAt: execution?.startedAt ?? null,
  executionCompletedAt: execution?.completedAt ?? null,
  executionOutcome: execution ? (execution.outcome ?? null) : null,
});

/** How long the summary of a hold's arguments kept for lists may be. */
export const LINE_SUMMARY_LENGTH = 160;

/**
 * `submittedSeq`: the seq of the hold's `hold.submitted` entry, appended in the same transaction.
 * `referenced`: the arguments its rule looks at, shown first in the line's summary (deciding-values.ts).
 */
export function insertHoldStatement(
  hold: Hold,
  submittedSeq: number | null = null,
  referenced: readonly string[] = [],
): Statement {
  const { execution, ...fields } = hold;
  const written = holds.omit('approvedSeq', 'approvalSeqs').insert({
    ...fields,
    // A new hold's execution is at most running: an allowed proxy call about to go upstream.
    ...executionColumns(execution),
    argumentsSummary: decidingText(hold.arguments, referenced, LINE_SUMMARY_LENGTH).text,
    argumentsSize: JSON.stringify(hold.arguments).length,
    submittedSeq,
  });
  return {
    text: `INSERT INTO holds (${written.columns}) VALUES ${written.values}`,
    params: written.params,
  };
}

const evidenceSeqs = holds.pick('submittedSeq', 'approvedSeq');

/** Where the hold's own entries are in its chain (services/hold-evidence.ts); null: none recorded. */
export const holdEvidenceSeqs = async (sql: Sql, workspaceId: string, holdId: string) => {
  const row = await sql.one(
    `SELECT ${evidenceSeqs.select()} FROM holds WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, holdId],
  );
  return row ? evidenceSeqs.decode(row) : { submittedSeq: null, approvedSeq: null };
};

const approvalSeqs = holds.pick('approvalSeqs');

/** The seqs of the hold's `hold.approval_recorded` entries of approvals so far (four eyes and more). */
export const approvalSeqsOf = async (sql: Sql, workspaceId: string, holdId: string): Promise<number[]> => {
  const row = await sql.one(
    `SELECT ${approvalSeqs.select()} FROM holds WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, holdId],
  );
  return (row && approvalSeqs.decode(row).approvalSeqs) ?? [];
};

/** Sets some of the hold's chain seqs. */
function setSeqs(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  seqs: Partial<RecordOf<typeof holds.fields>>,
) {
  const { set, params } = holds.update(seqs, 3);
  return sql.run(`UPDATE holds SET ${set} WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    holdId,
    ...params,
  ]);
}

export const setApprovalSeqs = (sql: Sql, workspaceId: string, holdId: string, seqs: readonly number[]) =>
  setSeqs(sql, workspaceId, holdId, { approvalSeqs: [...seqs] });

/** The seq of the `hold.approved` entry that approved the hold, in the decision's transaction. */
export const setApprovedSeq = (sql: Sql, workspaceId: string, holdId: string, seq: number) =>
  setSeqs(sql, workspaceId, holdId, { approvedSeq: seq });

/** `lock` takes a row lock on PostgreSQL, for a read that is followed by a state change. */
export async function findHold(
  sql: Sql,
  workspaceId: string,
  id: string,
  lock = false,
): Promise<Hold | undefined> {
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE id = $1 AND workspace_id = $2${lock ? ' FOR UPDATE' : ''}`,
    [id, workspaceId],
  );
  return toHold(row);
}

/** For the public status page, which knows no workspace: the reference alone is the secret. */
export async function findHoldByReference(sql: Sql, id: string): Promise<Hold | undefined> {
  return toHold(await sql.one(`SELECT ${holdColumns.select()} FROM holds WHERE id = $1`, [id]));
}

export async function findHoldByIdempotencyKey(
  sql: Sql,
  workspaceId: string,
  key: string,
): Promise<Hold | undefined> {
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE workspace_id = $1 AND idempotency_key = $2`,
    [workspaceId, key],
  );
  return toHold(row);
}

/** Writes the mutable part of a hold: its status, approvals, changed arguments, decision and execution. */
export async function updateHoldState(sql: Sql, hold: Hold): Promise<void> {
  const { text, params } = holdStateStatement(hold);
  await sql.run(text, params);
}

/** `updateHoldState` as a statement, to be sent with others (statements.ts). */
export function holdStateStatement(hold: Hold): Statement {
  const { set, params } = holds.update(
    {
      status: hold.status,
      approvalsReceived: hold.approvalsReceived,
      changedArguments: hold.changedArguments,
      verdict: hold.verdict,
      reason: hold.reason,
      channel: hold.channel,
      decidedAt: hold.decidedAt,
      ...executionColumns(hold.execution),
    },
    3,
  );
  return {
    text: `UPDATE holds SET ${set} WHERE id = $1 AND workspace_id = $2`,
    params: [hold.id, hold.workspaceId, ...params],
  };
}

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
  const row = await sql.one(
    `SELECT ${holdColumns.select()} FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$2')} ORDER BY created_at DESC LIMIT 1`,
    [workspaceId, callKey],
  );
  return toHold(row);
}
