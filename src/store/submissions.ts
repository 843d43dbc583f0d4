/**
 * What a submission reads once it holds its workspace's chain lock: the chain's head, whether the
 * idempotency key or an identical proxy call already has a hold, the rule set's version, the tool's
 * classification, the holds of the month (plans with a monthly limit), whether it has a webhook, and
 * the recent calls of each frequency scope asked. A PostgreSQL statement that waits for a row lock still reads with the
 * snapshot it started with, and would miss what the holder it waited for committed (the frequency
 * counts, the idempotency key): there a function takes the lock and then reads (migration 024), one
 * round trip; on SQLite, whose write transactions are exclusive, the read alone. Frequency counts, when a rule asks for them, are one
 * statement more.
 */
import type { Classification } from '../domain/policy.ts';
import type { Sql } from './db.ts';
import { type CallScope, openProxyHoldWhere, recentCallsCount } from './holds.ts';

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
}

/**
 * The read on SQLite, after the lock. PostgreSQL runs the same read inside `lock_for_submission`
 * (migration 024), which takes the lock first: keep the two in step.
 */
const READ_AFTER_LOCK = `SELECT h.seq, h.hash,
       (SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2) AS "replayId",
       CASE WHEN $5 IS NULL THEN NULL ELSE (SELECT id FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$5')}
         ORDER BY created_at DESC LIMIT 1) END AS "openId",
       COALESCE((SELECT version FROM rule_sets WHERE workspace_id = $1), 0) AS "ruleSetVersion",
       t.name AS "toolName", t.classification, t.first_seen_at AS "firstSeenAt",
       CASE WHEN $6 IS NULL THEN NULL ELSE (SELECT COUNT(*) FROM holds WHERE workspace_id = $1 AND created_at >= $6) END
         AS "holdsSince",
       EXISTS (SELECT 1 FROM webhook_endpoints WHERE workspace_id = $1) AS webhook
     FROM evidence_heads h LEFT JOIN tools t ON t.workspace_id = h.workspace_id AND t.connection = $3 AND t.name = $4
     WHERE h.workspace_id = $1`;

/** The function's columns by name: a change to its others cannot change what this statement returns. */
const STATE_COLUMNS = `seq, hash, "replayId", "openId", "ruleSetVersion", "toolName", classification, "firstSeenAt", "holdsSince", webhook`;

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
      ? await sql.one<Record<string, unknown>>(
          `SELECT ${STATE_COLUMNS} FROM lock_for_submission($1, $2, $3, $4, $5, $6)`,
          args,
        )
      : // SQLite's write transaction is exclusive already: no lock to take first.
        await sql.one<Record<string, unknown>>(READ_AFTER_LOCK, args);
  if (!row) return undefined;
  const number = (value: unknown) => (value === null ? null : Number(value));
  return {
    head: { seq: Number(row.seq), hash: String(row.hash) },
    replayId: (row.replayId as string | null) ?? null,
    openId: (row.openId as string | null) ?? null,
    ruleSetVersion: Number(row.ruleSetVersion),
    tool:
      row.toolName === null
        ? null
        : { classification: row.classification as Classification, firstSeenAt: number(row.firstSeenAt) },
    holdsSince: number(row.holdsSince),
    counts: await countScopes(sql, ask.workspaceId, ask.scopes),
    webhook: Boolean(row.webhook),
  };
}

/** The recent calls of each scope, in one statement made under the lock (after it: a snapshot of its own). */
async function countScopes(sql: Sql, workspaceId: string, scopes: { scope: CallScope; since: number }[]) {
  if (scopes.length === 0) return [];
  const params: unknown[] = [workspaceId];
  const counts = scopes.map(({ scope, since }, i) => `${recentCallsCount(scope, since, params)} AS c${i}`);
  const row = (await sql.one<Record<string, unknown>>(`SELECT ${counts.join(', ')}`, params))!;
  return scopes.map((_, i) => Number(row[`c${i}`]));
}
