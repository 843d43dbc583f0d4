/**
 * The outboxes: jobs written with a state change and sent by the workers of any instance. A worker
 * claims due rows for a while, so that no other instance sends them meanwhile; a claim that runs out
 * (its instance died) makes the row due again, so every job is sent at least once.
 */
import { columns, integer, text } from './columns.ts';
import type { Sql } from './db.ts';

/** What a claim answers of each row: the outboxes' columns are named alike. */
const claimedRows = columns({ id: text('id'), nextAttemptAt: integer('next_attempt_at') });

/** The outbox tables, and what else makes a row due. A fixed list: the names are written into the SQL. */
const OUTBOXES = {
  notifications: { table: 'notifications', alsoDue: '' },
  // An event waits while its workspace's endpoint is disabled.
  webhook_events: {
    table: 'webhook_events',
    alsoDue: `AND EXISTS (SELECT 1 FROM webhook_endpoints p
      WHERE p.workspace_id = webhook_events.workspace_id AND p.disabled_at IS NULL)`,
  },
};
export type Outbox = keyof typeof OUTBOXES;

/** Rows due at `$1` and not claimed by anyone. */
const due = (outbox: Outbox) =>
  `state = 'pending' AND next_attempt_at <= $1 AND (claimed_until IS NULL OR claimed_until < $1)
   ${OUTBOXES[outbox].alsoDue}`;

/** Whether any row is due: a read, so that a round with nothing to do takes no lock. */
export async function anyDue(sql: Sql, outbox: Outbox, now: number): Promise<boolean> {
  const { table } = OUTBOXES[outbox];
  return (await sql.one(`SELECT 1 AS due FROM ${table} WHERE ${due(outbox)} LIMIT 1`, [now])) !== undefined;
}

/**
 * Claims up to `limit` due rows until `now + claimMs` in one statement, and returns their ids, the
 * longest due first. On PostgreSQL concurrent claims skip each other's rows; SQLite has one writer.
 */
export async function claimDue(
  sql: Sql,
  outbox: Outbox,
  claim: { now: number; claimMs: number; limit: number },
): Promise<string[]> {
  const { table } = OUTBOXES[outbox];
  const rows = await sql.all(
    `UPDATE ${table} SET claimed_until = $2
     WHERE id IN (SELECT id FROM ${table} WHERE ${due(outbox)} ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     RETURNING ${claimedRows.select()}`,
    [claim.now, claim.now + claim.claimMs, claim.limit],
  );
  // RETURNING has no order of its own.
  return claimedRows
    .decodeAll(rows)
    .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)
    .map((row) => row.id);
}
