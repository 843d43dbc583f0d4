/**
 * What a submission reads once it holds its workspace's chain lock, in one statement: the chain's
 * head, whether the idempotency key or an identical proxy call already has a hold, the rule set's
 * version, the tool's classification, the holds of the month (plans with a monthly limit), and the
 * recent calls of each frequency scope asked. A PostgreSQL statement that waits for a row lock still
 * reads with the snapshot it started with, and would miss what the holder it waited for committed
 * (the frequency counts, the idempotency key): there the lock and the read go to one function that
 * takes the lock first (migration 019), one round trip; on SQLite they are two statements.
 */
import type { Classification } from '../domain/policy.ts';
import type { Sql } from './db.ts';
import { lockChainHead } from './evidence.ts';
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
}

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
  const params: unknown[] = [ask.workspaceId, ask.idempotencyKey, ask.connection, ask.toolName];
  const optional = (value: unknown, select: (placeholder: string) => string) => {
    if (value === null) return 'NULL';
    params.push(value);
    return select(`$${params.length}`);
  };
  const openId = optional(
    ask.callKey,
    (key) =>
      `(SELECT id FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere(key)} ORDER BY created_at DESC LIMIT 1)`,
  );
  const holdsSince = optional(
    ask.countSince,
    (since) => `(SELECT COUNT(*) FROM holds WHERE workspace_id = $1 AND created_at >= ${since})`,
  );
  const counts = ask.scopes.map(
    ({ scope, since }, i) => `${recentCallsCount(scope, since, params)} AS c${i}`,
  );
  const query = `SELECT h.seq, h.hash,
       (SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2) AS "replayId",
       ${openId} AS "openId",
       COALESCE((SELECT version FROM rule_sets WHERE workspace_id = $1), 0) AS "ruleSetVersion",
       t.name AS "toolName", t.classification, t.first_seen_at AS "firstSeenAt",
       ${holdsSince} AS "holdsSince"${counts.map((count) => `,\n       ${count}`).join('')}
     FROM evidence_heads h LEFT JOIN tools t ON t.workspace_id = h.workspace_id AND t.connection = $3 AND t.name = $4
     WHERE h.workspace_id = $1`;
  const row =
    dialect === 'postgres' ? await readAfterLock(sql, query, params) : await readLocked(sql, query, params);
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
    counts: ask.scopes.map((_, i) => Number(row[`c${i}`])),
  };
}

async function readLocked(sql: Sql, query: string, params: unknown[]) {
  if (!(await lockChainHead(sql, params[0] as string))) return undefined;
  return sql.one<Record<string, unknown>>(query, params);
}

/** The function's parameters are one text array: `$n` becomes `($1)[n]`, cast back to its type. */
async function readAfterLock(sql: Sql, query: string, params: unknown[]) {
  const inner = query.replace(
    /\$(\d+)/g,
    (_, n: string) => `($1)[${n}]::${typeof params[Number(n) - 1] === 'number' ? 'bigint' : 'text'}`,
  );
  const row = await sql.one<{ read: Record<string, unknown> }>(
    'SELECT read_after_chain_lock($1, $2, $3) AS read',
    [params[0], inner, params.map(String)],
  );
  return row?.read;
}
