import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';
import { Where } from './where.ts';

/** Every column of `webhook_endpoints`: a workspace's one endpoint. */
const endpoints = columns({
  workspaceId: text('workspace_id'),
  url: text('url'),
  secretSealed: text('secret_sealed'),
  previousSecretSealed: nullable(text('previous_secret_sealed')),
  previousUntil: nullable(integer('previous_until')),
  disabledAt: nullable(integer('disabled_at')),
  createdAt: integer('created_at'),
});

export type WebhookEndpoint = RecordOf<typeof endpoints.fields>;

export async function findWebhookEndpoint(sql: Sql, workspaceId: string) {
  const row = await sql.one(`SELECT ${endpoints.select()} FROM webhook_endpoints WHERE workspace_id = $1`, [
    workspaceId,
  ]);
  return row && endpoints.decode(row);
}

export async function saveWebhookEndpoint(sql: Sql, endpoint: WebhookEndpoint): Promise<void> {
  const row = endpoints.insert(endpoint);
  await sql.run(
    `INSERT INTO webhook_endpoints (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id) DO UPDATE SET url = excluded.url, secret_sealed = excluded.secret_sealed,
       previous_secret_sealed = excluded.previous_secret_sealed, previous_until = excluded.previous_until,
       disabled_at = excluded.disabled_at`,
    row.params,
  );
}

export async function deleteWebhookEndpoint(sql: Sql, workspaceId: string): Promise<void> {
  await sql.run('DELETE FROM webhook_endpoints WHERE workspace_id = $1', [workspaceId]);
}

export async function disableWebhookEndpoint(sql: Sql, workspaceId: string, at: number): Promise<void> {
  await sql.run('UPDATE webhook_endpoints SET disabled_at = $2 WHERE workspace_id = $1', [workspaceId, at]);
}

/** Every column of `webhook_events` read or written here: the outbox of a workspace's events. */
const events = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  holdId: text('hold_id'),
  event: text('event'),
  body: text('body'),
  createdAt: integer('created_at'),
  state: text<'pending' | 'delivered' | 'dead'>('state'),
  attempts: integer('attempts'),
  nextAttemptAt: integer('next_attempt_at'),
  deliveredAt: nullable(integer('delivered_at')),
});

export type WebhookEventRow = RecordOf<typeof events.fields>;

type NewWebhookEvent = Pick<
  WebhookEventRow,
  'id' | 'workspaceId' | 'holdId' | 'event' | 'body' | 'createdAt'
>;

/** An event for the outbox, as a statement (`writeTogether` sends it with the change that causes it). */
export function insertWebhookEventStatement(row: NewWebhookEvent): Statement {
  const written = events
    .omit('deliveredAt')
    .insert({ ...row, state: 'pending', attempts: 0, nextAttemptAt: row.createdAt });
  return {
    text: `INSERT INTO webhook_events (${written.columns}) VALUES ${written.values}`,
    params: written.params,
  };
}

export async function insertWebhookEvent(sql: Sql, row: NewWebhookEvent): Promise<void> {
  const { text, params } = insertWebhookEventStatement(row);
  await sql.run(text, params);
}

export async function findWebhookEvent(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${events.select()} FROM webhook_events WHERE id = $1`, [id]);
  return row && events.decode(row);
}

/**
 * Claimed events with their workspace's endpoint, in the order of `ids`: what their attempts need, in
 * one read. An event whose endpoint is gone is left out.
 */
export async function findDeliveries(sql: Sql, ids: string[]) {
  if (ids.length === 0) return [];
  const rows = await sql.all(
    `SELECT ${events.select('e')}, ${endpoints.select('p', 'endpoint')}
     FROM webhook_events e JOIN webhook_endpoints p ON p.workspace_id = e.workspace_id
     WHERE e.id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`,
    ids,
  );
  const found = new Map(
    rows.map((row) => {
      const event = events.decode(row);
      return [event.id, { event, endpoint: endpoints.decode(row, 'endpoint') }];
    }),
  );
  return ids.flatMap((id) => found.get(id) ?? []);
}

/**
 * The statements that record an attempt and the event's next state (they touch that event's rows
 * only, so those of many events can be written together).
 */
export function recordAttempt(
  attempt: {
    eventId: string;
    attempt: number;
    startedAt: number;
    durationMs: number;
    statusCode: number | null;
    error: string | null;
  },
  next: { state: WebhookEventRow['state']; nextAttemptAt: number; deliveredAt: number | null },
): Statement[] {
  // The log numbers attempts across redeliveries; `attempts` on the event counts the current round.
  return [
    {
      text: `INSERT INTO webhook_attempts (event_id, attempt, started_at, duration_ms, status_code, error)
     SELECT $1, COALESCE(MAX(attempt), 0) + 1, $2, $3, $4, $5 FROM webhook_attempts WHERE event_id = $1`,
      params: [attempt.eventId, attempt.startedAt, attempt.durationMs, attempt.statusCode, attempt.error],
    },
    {
      text: `UPDATE webhook_events SET attempts = $2, state = $3, next_attempt_at = $4, delivered_at = $5, claimed_until = NULL
     WHERE id = $1`,
      params: [attempt.eventId, attempt.attempt, next.state, next.nextAttemptAt, next.deliveredAt],
    },
  ];
}

export async function listWebhookEvents(
  sql: Sql,
  workspaceId: string,
  filter: { state?: string; limit: number },
): Promise<WebhookEventRow[]> {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filter.state) where.and('state = ?', filter.state);
  const rows = await sql.all(
    `SELECT ${events.select()} FROM webhook_events WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${where.param(filter.limit)}`,
    where.params,
  );
  return events.decodeAll(rows);
}

/** The columns of `webhook_attempts` read: the delivery log of an event. */
const attempts = columns({
  attempt: integer('attempt'),
  startedAt: integer('started_at'),
  durationMs: integer('duration_ms'),
  statusCode: nullable(integer('status_code')),
  error: nullable(text('error')),
});

export const listAttempts = async (sql: Sql, eventId: string) =>
  attempts.decodeAll(
    await sql.all(`SELECT ${attempts.select()} FROM webhook_attempts WHERE event_id = $1 ORDER BY attempt`, [
      eventId,
    ]),
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
