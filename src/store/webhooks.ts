import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';
import { Where } from './where.ts';

export interface WebhookEndpoint {
  workspaceId: string;
  url: string;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousUntil: number | null;
  disabledAt: number | null;
  createdAt: number;
}

const endpointColumns = `workspace_id AS "workspaceId", url, secret_sealed AS "secretSealed",
  previous_secret_sealed AS "previousSecretSealed", previous_until AS "previousUntil", disabled_at AS "disabledAt",
  created_at AS "createdAt"`;

export const findWebhookEndpoint = (sql: Sql, workspaceId: string) =>
  sql.one<WebhookEndpoint>(`SELECT ${endpointColumns} FROM webhook_endpoints WHERE workspace_id = $1`, [
    workspaceId,
  ]);

export async function saveWebhookEndpoint(sql: Sql, endpoint: WebhookEndpoint): Promise<void> {
  await sql.run(
    `INSERT INTO webhook_endpoints (workspace_id, url, secret_sealed, previous_secret_sealed, previous_until, disabled_at, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (workspace_id) DO UPDATE SET url = excluded.url, secret_sealed = excluded.secret_sealed,
       previous_secret_sealed = excluded.previous_secret_sealed, previous_until = excluded.previous_until,
       disabled_at = excluded.disabled_at`,
    [
      endpoint.workspaceId,
      endpoint.url,
      endpoint.secretSealed,
      endpoint.previousSecretSealed,
      endpoint.previousUntil,
      endpoint.disabledAt,
      endpoint.createdAt,
    ],
  );
}

export async function deleteWebhookEndpoint(sql: Sql, workspaceId: string): Promise<void> {
  await sql.run('DELETE FROM webhook_endpoints WHERE workspace_id = $1', [workspaceId]);
}

export async function disableWebhookEndpoint(sql: Sql, workspaceId: string, at: number): Promise<void> {
  await sql.run('UPDATE webhook_endpoints SET disabled_at = $2 WHERE workspace_id = $1', [workspaceId, at]);
}

export interface WebhookEventRow {
  id: string;
  workspaceId: string;
  holdId: string;
  event: string;
  body: string;
  createdAt: number;
  state: 'pending' | 'delivered' | 'dead';
  attempts: number;
  nextAttemptAt: number;
  deliveredAt: number | null;
}

const eventColumns = `id, workspace_id AS "workspaceId", hold_id AS "holdId", event, body, created_at AS "createdAt",
  state, attempts, next_attempt_at AS "nextAttemptAt", delivered_at AS "deliveredAt"`;

type NewWebhookEvent = Pick<
  WebhookEventRow,
  'id' | 'workspaceId' | 'holdId' | 'event' | 'body' | 'createdAt'
>;

/** An event for the outbox, as a statement (`writeTogether` sends it with the change that causes it). */
export function insertWebhookEventStatement(row: NewWebhookEvent): Statement {
  return {
    text: `INSERT INTO webhook_events (id, workspace_id, hold_id, event, body, created_at, state, attempts, next_attempt_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $6)`,
    params: [row.id, row.workspaceId, row.holdId, row.event, row.body, row.createdAt],
  };
}

export async function insertWebhookEvent(sql: Sql, row: NewWebhookEvent): Promise<void> {
  const { text, params } = insertWebhookEventStatement(row);
  await sql.run(text, params);
}

export const findWebhookEvent = (sql: Sql, id: string) =>
  sql.one<WebhookEventRow>(`SELECT ${eventColumns} FROM webhook_events WHERE id = $1`, [id]);

export async function recordAttempt(
  sql: Sql,
  attempt: {
    eventId: string;
    attempt: number;
    startedAt: number;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
  },
  next: { state: WebhookEventRow['state']; nextAttemptAt: number; deliveredAt: number | null },
): Promise<void> {
  // The log numbers attempts across redeliveries; `attempts` on the event counts the current round.
  await sql.run(
    `INSERT INTO webhook_attempts (event_id, attempt, started_at, duration_ms, status_code, error)
     SELECT $1, COALESCE(MAX(attempt), 0) + 1, $2, $3, $4, $5 FROM webhook_attempts WHERE event_id = $1`,
    [attempt.eventId, attempt.startedAt, attempt.durationMs, attempt.statusCode, attempt.error],
  );
  await sql.run(
    `UPDATE webhook_events SET attempts = $2, state = $3, next_attempt_at = $4, delivered_at = $5, claimed_until = NULL
     WHERE id = $1`,
    [attempt.eventId, attempt.attempt, next.state, next.nextAttemptAt, next.deliveredAt],
  );
}

export async function listWebhookEvents(
  sql: Sql,
  workspaceId: string,
  filter: { state?: string; limit: number },
): Promise<WebhookEventRow[]> {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filter.state) where.and('state = ?', filter.state);
  return sql.all<WebhookEventRow>(
    `SELECT ${eventColumns} FROM webhook_events WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${where.param(filter.limit)}`,
    where.params,
  );
}

export const listAttempts = (sql: Sql, eventId: string) =>
  sql.all<{
    attempt: number;
    startedAt: number;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
  }>(
    `SELECT attempt, started_at AS "startedAt", duration_ms AS "durationMs", status_code AS "statusCode", error
     FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`,
    [eventId],
  );

/** Puts dead (or any) events back in the queue for a fresh round of attempts. */
export async function requeueEvents(sql: Sql, workspaceId: string, ids: string[] | 'all-dead', now: number) {
  if (ids === 'all-dead') {
    return sql.run(
      `UPDATE webhook_events SET state = 'pending', attempts = 0, next_attempt_at = $2, claimed_until = NULL
       WHERE workspace_id = $1 AND state = 'dead'`,
      [workspaceId, now],
    );
  }
  let changed = 0;
  for (const id of ids) {
    changed += await sql.run(
      `UPDATE webhook_events SET state = 'pending', attempts = 0, next_attempt_at = $3, claimed_until = NULL
       WHERE workspace_id = $1 AND id = $2`,
      [workspaceId, id, now],
    );
  }
  return changed;
}
