/**
 * What a submission reads once it holds its workspace's chain lock: the chain's head, whether the
 * idempotency key or an identical proxy call already has a hold, the rule set's version, the tool's
 * classification, the holds of the month (plans with a monthly limit), whether it has a webhook,
 * whether it is frozen (read under the lock that freezing takes too: no hold is let in after a freeze
 * committed, on any instance), and the recent calls of each frequency scope asked. A PostgreSQL statement that waits for a row lock still reads with the
 * snapshot it started with, and would miss what the holder it waited for committed (the frequency
 * counts, the idempotency key): there a function takes the lock and then reads (lock_for_submission,
 * made from the read below by migration 034), one round trip; on SQLite, whose write transactions are
 * exclusive, the read alone. Frequency counts, when a rule asks for them, are one
 * statement more.
 */
import type { Classification } from '../domain/policy.ts';
import { boolean, columns, integer, nullable, text } from './columns.ts';
import type { Sql } from './db.ts';
import { type CallScope, recentCallsCount } from './hold-calls.ts';
import { openProxyHoldWhere } from './holds.ts';

export interface SubmissionState {
  head: { seq: number; hash: string };
  /** The hold that already has this idempotency key. */
  replayId: string | null;
  /** The open hold of an identical proxy call. */
  openId: string | null;
  ruleSetVersion: number;
  tool: { classification: Classification; firstSeenAt: number | null } | null;
  /** Holds since `countSince`, when it was given. */
  holdsSince: number | null;
  /** The recent calls of each scope asked, in order. */
  counts: number[];
  /** The workspace has a webhook endpoint (a hold decided by a rule leaves an event for it). */
  webhook: boolean;
  /** The workspace is frozen: when, why and by whom; null when it is not. */
  frozen: { at: number; reason: string; by: string } | null;
}

/**
 * The read after the lock: on SQLite alone, on PostgreSQL inside `lock_for_submission`, made from this
 * text, where `$1`…`$6` are the function's parameters in the same order.
 */
const READ_AFTER_LOCK = `SELECT h.seq, h.hash,
       (SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2) AS "replayId",
       CASE WHEN $5 IS NULL THEN NULL ELSE (SELECT id FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$5')}
         ORDER BY created_at DESC LIMIT 1) END AS "openId",
       COALESCE((SELECT version FROM rule_sets WHERE workspace_id = $1), 0) AS "ruleSetVersion",
       t.name AS "toolName", t.classification, t.first_seen_at AS "firstSeenAt",
       CASE WHEN $6 IS NULL THEN NULL ELSE (SELECT COUNT(*) FROM holds WHERE workspace_id = $1 AND created_at >= $6) END
         AS "holdsSince",
       EXISTS (SELECT 1 FROM webhook_endpoints WHERE workspace_id = $1) AS webhook,
       w.frozen_at AS "frozenAt", w.frozen_reason AS "frozenReason", w.frozen_by AS "frozenBy"
     FROM evidence_heads h JOIN workspaces w ON w.id = h.workspace_id
       LEFT JOIN tools t ON t.workspace_id = h.workspace_id AND t.connection = $3 AND t.name = $4
     WHERE h.workspace_id = $1`;

/** The read's columns with their PostgreSQL types: the function's result. */
const STATE_TYPES = `seq BIGINT, hash TEXT, "replayId" TEXT, "openId" TEXT, "ruleSetVersion" BIGINT, "toolName" TEXT,
  classification TEXT, "firstSeenAt" BIGINT, "holdsSince" BIGINT, webhook BOOLEAN, "frozenAt" BIGINT,
  "frozenReason" TEXT, "frozenBy" TEXT`;

/** The function's columns by name: a change to its others cannot change what this statement returns. */
const STATE_COLUMNS = STATE_TYPES.replace(/ [A-Z]+/g, '');

/**
 * The function PostgreSQL runs (migration 034, made again by 043 when the read learnt of frozen
 * workspaces; listed in migrate.ts). The lock comes first and the read
 * is a statement of its own: its snapshot is taken once the lock is held, so it sees what the lock's
 * previous holder committed. Its body is static, planned once per connection. A database keeps the
 * function its migration made: a change to the read needs a migration that makes it again
 * (test/storage.test.ts knows the text migration 034 made).
 */
export const LOCK_FOR_SUBMISSION = `CREATE OR REPLACE FUNCTION lock_for_submission(
  p_workspace TEXT, p_key TEXT, p_connection TEXT, p_tool TEXT, p_call_key TEXT, p_since BIGINT
) RETURNS TABLE (${STATE_TYPES})
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM evidence_heads WHERE workspace_id = p_workspace FOR UPDATE;
  RETURN QUERY ${READ_AFTER_LOCK};
END
$$`;

const state = columns({
  seq: integer('seq'),
  hash: text('hash'),
  /** The hold that already has this idempotency key. */
  replayId: nullable(text('replayId')),
  openId: nullable(text('openId')),
  ruleSetVersion: integer('ruleSetVersion'),
  toolName: nullable(text('toolName')),
  classification: nullable(text<Classification>('classification')),
  firstSeenAt: nullable(integer('firstSeenAt')),
  holdsSince: nullable(integer('holdsSince')),
  webhook: boolean('webhook'),
  frozenAt: nullable(integer('frozenAt')),
  frozenReason: nullable(text('frozenReason')),
  frozenBy: nullable(text('frozenBy')),
});

export async function lockForSubmission(
  sql: Sql,
  dialect: 'sqlite' | 'postgres',
  ask: {
    workspaceId: string;
    idempotencyKey: string;
    callKey: string | null;
    connection: string;
    toolName: string;
    countSince: number | null;
    scopes: { scope: CallScope; since: number }[];
  },
): Promise<SubmissionState | undefined> {
  const args = [
    ask.workspaceId,
    ask.idempotencyKey,
    ask.connection,
    ask.toolName,
    ask.callKey,
    ask.countSince,
  ];
  const row =
    dialect === 'postgres'
      ? await sql.one(`SELECT ${STATE_COLUMNS} FROM lock_for_submission($1, $2, $3, $4, $5, $6)`, args)
      : // SQLite's write transaction is exclusive already: no lock to take first.
        await sql.one(READ_AFTER_LOCK, args);
  if (!row) return undefined;
  const { seq, hash, toolName, classification, firstSeenAt, frozenAt, frozenReason, frozenBy, ...rest } =
    state.decode(row);
  return {
    ...rest,
    head: { seq, hash },
    frozen: frozenAt === null ? null : { at: frozenAt, reason: frozenReason ?? '', by: frozenBy ?? '' },
    tool: toolName === null ? null : { classification: classification!, firstSeenAt },
    counts: await countScopes(sql, ask.workspaceId, ask.scopes),
  };
}

/** The recent calls of each scope, in one statement made under the lock (after it: a snapshot of its own). */
async function countScopes(sql: Sql, workspaceId: string, scopes: { scope: CallScope; since: number }[]) {
  if (scopes.length === 0) return [];
  const params: unknown[] = [workspaceId];
  const counts = scopes.map(({ scope, since }, i) => `${recentCallsCount(scope, since, params)} AS c${i}`);
  const row = (await sql.one(`SELECT ${counts.join(', ')}`, params))!;
  // Computed counts, one column each: `c0`, `c1`…
  return scopes.map((_, i) => integer(`c${i}`).decode(row[`c${i}`]));
}
