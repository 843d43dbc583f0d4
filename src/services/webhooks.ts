/**
 * Webhooks (decisions.md, Webhooks): events stored with the state change that causes them, delivered
 * at least once with signatures, retried on the schedule, dead-lettered after the last attempt.
 */
import { createHmac, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { backoffDelay } from '../domain/backoff.ts';
import type { Hold } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import {
  type DelegatedBy,
  delegationEventBody,
  DELIVERY_RETRIES,
  eventBody,
  eventOf,
  followUpEventBody,
  MAX_ATTEMPTS,
  testEventBody,
} from '../domain/webhooks.ts';
import type { Sql } from '../store/db.ts';
import { type Statement, writeTogether } from '../store/statements.ts';
import { anyDue, claimDue } from '../store/outbox.ts';
import {
  deleteWebhookEndpoint,
  disableWebhookEndpoint,
  findDeliveries,
  findWebhookEndpoint,
  findWebhookEvent,
  insertWebhookEvent,
  insertWebhookEventStatement,
  listAttempts,
  listWebhookEvents,
  recordAttempt,
  requeueEvents,
  saveWebhookEndpoint,
  type WebhookEndpoint,
  type WebhookEventRow,
} from '../store/webhooks.ts';
import type { ServiceContext } from './context.ts';
import { notFound } from './errors.ts';
import { openChain } from './evidence.ts';

export const ROTATION_OVERLAP_MS = 24 * 3_600_000;
const CLAIM_MS = 30_000;

export const newWebhookSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** `X-Service-Signature`: hex HMAC-SHA256 of the raw body keyed with the secret string as shown. */
export const serviceSignature = (secret: string | KeyObject, body: string) =>
  createHmac('sha256', secret).update(body).digest('hex');

/** Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed with the decoded secret. */
export const standardSignature = (secret: SigningSecret, id: string, timestamp: number, body: string) =>
  `v1,${createHmac('sha256', secret.decoded).update(`${id}.${timestamp}.${body}`).digest('base64')}`;

/**
 * A webhook secret's two HMAC keys: the secret as shown (its UTF-8 bytes) and decoded (the Standard
 * Webhooks key). Key objects, made once: an HMAC keyed with a string or a buffer makes one each time,
 * three quarters of its CPU.
 */
interface SigningSecret {
  text: KeyObject;
  decoded: KeyObject;
}

/**
 * Secrets opened once per sealed value, where every delivery decrypted its endpoint's secret and
 * decoded it again (half of an attempt's own CPU). Keyed by the sealed text: a rotated secret is a
 * new one. At most `SECRETS_KEPT` per sealer.
 */
const openedSecrets = new WeakMap<ServiceContext['sealer'], Map<string, SigningSecret>>();
const SECRETS_KEPT = 1_000;

function openSecret(ctx: ServiceContext, sealed: string): SigningSecret {
  let opened = openedSecrets.get(ctx.sealer);
  if (!opened) openedSecrets.set(ctx.sealer, (opened = new Map()));
  let secret = opened.get(sealed);
  if (!secret) {
    const text = ctx.sealer.open(sealed);
    secret = {
      text: createSecretKey(Buffer.from(text, 'utf8')),
      decoded: createSecretKey(Buffer.from(text.slice('whsec_'.length), 'base64')),
    };
    if (opened.size >= SECRETS_KEPT) opened.clear();
    opened.set(sealed, secret);
  }
  return secret;
}

/** The outbox row of the hold's event, if its state has one (for a workspace with a webhook). */
export function holdEventStatement(
  ctx: ServiceContext,
  hold: Hold,
  delegated?: DelegatedBy,
): Statement | null {
  const event = eventOf(hold);
  if (!event) return null;
  const now = ctx.now();
  return insertWebhookEventStatement({
    id: randomId('msg_', 16),
    workspaceId: hold.workspaceId,
    holdId: hold.id,
    event,
    body: JSON.stringify(eventBody(event, hold, now, delegated)),
    createdAt: now,
  });
}

/** Inside the transaction that moved the hold to its final state: the event waits in the outbox. */
export async function emitHoldEvent(tx: Sql, ctx: ServiceContext, hold: Hold, delegated?: DelegatedBy) {
  // The endpoint first: most workspaces have none, and then the event's body is never made.
  if (!eventOf(hold) || !(await findWebhookEndpoint(tx, hold.workspaceId))) return;
  const { text, params } = holdEventStatement(ctx, hold, delegated)!;
  await tx.run(text, params);
}

/** Inside the transaction of a reminder or an escalation step: its event, for a workspace with a webhook. */
export async function emitFollowUpEvent(
  tx: Sql,
  ctx: ServiceContext,
  hold: Hold,
  event: 'hold.reminded' | 'hold.escalated',
  detail: Record<string, unknown>,
): Promise<void> {
  if (!(await findWebhookEndpoint(tx, hold.workspaceId))) return;
  const now = ctx.now();
  await insertWebhookEvent(tx, {
    id: randomId('msg_', 16),
    workspaceId: hold.workspaceId,
    holdId: hold.id,
    event,
    body: JSON.stringify(followUpEventBody(event, hold, now, detail)),
    createdAt: now,
  });
}

/** An event about no hold, whose body's `id` is its own reference (`test:…`, `delegation:…`). */
async function insertOwnEvent(
  tx: Sql,
  workspaceId: string,
  id: string,
  body: { id: string; event: string },
  now: number,
): Promise<void> {
  await insertWebhookEvent(tx, {
    id,
    workspaceId,
    holdId: body.id,
    event: body.event,
    body: JSON.stringify(body),
    createdAt: now,
  });
}

/** Inside the configuration change that set, changed or ended delegations: one event for each. */
export async function emitDelegationEvents(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  changes: Record<string, unknown>[],
): Promise<void> {
  if (!(await findWebhookEndpoint(tx, workspaceId))) return;
  const now = ctx.now();
  for (const change of changes) {
    const id = randomId('msg_', 16);
    await insertOwnEvent(
      tx,
      workspaceId,
      id,
      delegationEventBody(workspaceId, change, `delegation:${id}`, now),
      now,
    );
  }
}

/**
 * "Send test event": a signed `webhook.test` event through the outbox, so it is delivered, retried and
 * logged like every other. It changes nothing, so it is not evidenced.
 */
export async function sendTestEvent(ctx: ServiceContext, workspaceId: string): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    if (!(await findWebhookEndpoint(tx, workspaceId))) throw notFound('webhook endpoint');
    const now = ctx.now();
    const id = randomId('msg_', 16);
    await insertOwnEvent(tx, workspaceId, id, testEventBody(workspaceId, id, now), now);
  });
}

/**
 * The `webhook` part of the apply file, inside its transaction. Returns the new secret when one was
 * made (the only time it is shown). Declaring the endpoint again re-enables it after a 410.
 */
export async function configureWebhook(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  url: string | null,
): Promise<{ secret?: string }> {
  const current = await findWebhookEndpoint(tx, workspaceId);
  if (url === null) {
    if (current) await deleteWebhookEndpoint(tx, workspaceId);
    return {};
  }
  const secret = current ? undefined : newWebhookSecret();
  await saveWebhookEndpoint(tx, {
    workspaceId,
    url,
    secretSealed: current?.secretSealed ?? ctx.sealer.seal(secret!),
    previousSecretSealed: current?.previousSecretSealed ?? null,
    previousUntil: current?.previousUntil ?? null,
    disabledAt: null,
    createdAt: current?.createdAt ?? ctx.now(),
  });
  return { secret };
}

/** A new secret; the old one keeps signing beside it for 24 hours, so receivers can switch over. */
export async function rotateWebhookSecret(
  ctx: ServiceContext,
  workspaceId: string,
): Promise<{ secret: string }> {
  const secret = newWebhookSecret();
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspaceId);
    const current = await findWebhookEndpoint(tx, workspaceId);
    if (!current) throw notFound('webhook endpoint');
    const now = ctx.now();
    await saveWebhookEndpoint(tx, {
      ...current,
      secretSealed: ctx.sealer.seal(secret),
      previousSecretSealed: current.secretSealed,
      previousUntil: now + ROTATION_OVERLAP_MS,
    });
    await chain.append('webhook.secret_rotated', {
      previous_valid_until: new Date(now + ROTATION_OVERLAP_MS).toISOString(),
    });
  });
  return { secret };
}

function signingSecrets(ctx: ServiceContext, endpoint: WebhookEndpoint, now: number): SigningSecret[] {
  const secrets = [openSecret(ctx, endpoint.secretSealed)];
  if (endpoint.previousSecretSealed && (endpoint.previousUntil ?? 0) > now) {
    secrets.push(openSecret(ctx, endpoint.previousSecretSealed));
  }
  return secrets;
}

/** The headers of one attempt; during a rotation both secrets sign (new first). */
export function deliveryHeaders(
  secrets: SigningSecret[],
  delivery: { id: string; event: string; body: string; timestamp: number },
) {
  const { id, event, body, timestamp } = delivery;
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'approvals-webhooks/1',
    'X-Service-Event': event,
    'X-Service-Delivery': id,
    'X-Service-Timestamp': String(timestamp),
    'X-Service-Signature': secrets.map((secret) => serviceSignature(secret.text, body)).join(','),
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => standardSignature(secret, id, timestamp, body)).join(' '),
  };
}

export type Send = (
  url: string,
  headers: Record<string, string>,
  body: string,
) => Promise<{ statusCode: number | null; error: string | null; retryAfterMs?: number }>;

/** A claimed event, and the endpoint it goes to. */
export interface Delivery {
  event: WebhookEventRow;
  endpoint: WebhookEndpoint;
}

/** Takes up to `limit` due events for one attempt each (see `attemptDelivery`), read with their endpoints. */
export async function claimDeliveries(ctx: ServiceContext, limit: number): Promise<Delivery[]> {
  // Most rounds (every hold change starts one) find nothing due.
  if (!(await anyDue(ctx.db, 'webhook_events', ctx.now()))) return [];
  return ctx.db.transaction(async (tx) =>
    findDeliveries(tx, await claimDue(tx, 'webhook_events', { now: ctx.now(), claimMs: CLAIM_MS, limit })),
  );
}

/** What an attempt came to, to be recorded. */
interface Outcome {
  workspaceId: string;
  /** The receiver answered 410: its endpoint is disabled. */
  gone: boolean;
  statements: Statement[];
}

/**
 * Records attempts' outcomes: those that come in one turn of the event loop are written in one
 * transaction (on PostgreSQL in one round trip with its commit), and each is answered once that
 * transaction is durable. The event stays claimed until then, so no other round sends it meanwhile.
 */
export function attemptRecorder(ctx: ServiceContext): (outcome: Outcome) => Promise<void> {
  let waiting: { outcome: Outcome; resolve: () => void; reject: (error: unknown) => void }[] = [];
  const write = async () => {
    const these = waiting;
    waiting = [];
    try {
      await ctx.db.transaction(async (tx) => {
        const gone = new Set(
          these.filter(({ outcome }) => outcome.gone).map(({ outcome }) => outcome.workspaceId),
        );
        for (const workspaceId of gone) await disableWebhookEndpoint(tx, workspaceId, ctx.now());
        await writeTogether(
          tx,
          ctx.db.dialect,
          these.flatMap(({ outcome }) => outcome.statements),
        );
      });
      for (const { resolve } of these) resolve();
    } catch (error) {
      for (const { reject } of these) reject(error);
    }
  };
  return (outcome) =>
    new Promise((resolve, reject) => {
      waiting.push({ outcome, resolve, reject });
      if (waiting.length === 1) setImmediate(() => void write());
    });
}

/** One attempt at a claimed event, and its outcome: delivered, retried later, dead, or the endpoint disabled. */
export async function attemptDelivery(
  ctx: ServiceContext,
  worker: { send: Send; record: (outcome: Outcome) => Promise<void>; retryScale: number },
  { event, endpoint }: Delivery,
): Promise<void> {
  const startedAt = ctx.now();
  const timestamp = Math.floor(startedAt / 1000);
  const headers = deliveryHeaders(signingSecrets(ctx, endpoint, startedAt), { ...event, timestamp });
  const result = await worker.send(endpoint.url, headers, event.body);
  const number = event.attempts + 1;
  const acknowledged = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const now = ctx.now();
  const next = acknowledged
    ? { state: 'delivered' as const, nextAttemptAt: now, deliveredAt: now }
    : number >= MAX_ATTEMPTS
      ? { state: 'dead' as const, nextAttemptAt: now, deliveredAt: null }
      : {
          state: 'pending' as const,
          nextAttemptAt:
            now +
            backoffDelay(DELIVERY_RETRIES, number, {
              scale: worker.retryScale,
              random: Math.random(),
              atLeastMs: result.retryAfterMs,
            }),
          deliveredAt: null,
        };
  await worker.record({
    workspaceId: event.workspaceId,
    gone: result.statusCode === 410,
    statements: recordAttempt(
      {
        eventId: event.id,
        attempt: number,
        startedAt,
        durationMs: now - startedAt,
        statusCode: result.statusCode,
        error: result.error,
      },
      next,
    ),
  });
}

/** Dead letters (or given events) back into the queue for a fresh round of attempts. */
export async function redeliver(ctx: ServiceContext, workspaceId: string, ids: string[] | 'all-dead') {
  const count = await ctx.db.transaction((tx) => requeueEvents(tx, workspaceId, ids, ctx.now()));
  return { requeued: count };
}

/** The delivery log: events newest first, each with its attempts (status codes, errors, timings). */
export async function deliveryLog(
  ctx: ServiceContext,
  workspaceId: string,
  filter: { state?: string; limit?: number } = {},
) {
  const events = await listWebhookEvents(ctx.db, workspaceId, {
    state: filter.state,
    limit: filter.limit ?? 100,
  });
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return Promise.all(
    events.map(async (event) => ({
      id: event.id,
      event: event.event,
      hold: event.holdId,
      state: event.state,
      created_at: iso(event.createdAt),
      delivered_at: iso(event.deliveredAt),
      next_attempt_at: event.state === 'pending' ? iso(event.nextAttemptAt) : null,
      attempts: (await listAttempts(ctx.db, event.id)).map((a) => ({
        attempt: a.attempt,
        at: iso(a.startedAt),
        duration_ms: a.durationMs,
        status_code: a.statusCode,
        error: a.error,
      })),
    })),
  );
}

/** The workspace's webhook endpoint, if it has one. */
export const webhookEndpointOf = (ctx: ServiceContext, workspaceId: string) =>
  findWebhookEndpoint(ctx.db, workspaceId);

/** One event of the workspace's delivery log; another workspace's is as unknown as a missing one. */
export async function webhookEventOf(ctx: ServiceContext, workspaceId: string, id: string) {
  const event = await findWebhookEvent(ctx.db, id);
  return event && event.workspaceId === workspaceId ? event : null;
}

/** How many deliveries gave up, counted up to `limit`. */
export const deadDeliveries = async (ctx: ServiceContext, workspaceId: string, limit: number) =>
  (await listWebhookEvents(ctx.db, workspaceId, { state: 'dead', limit })).length;
