/** Webhook events (interface.md, Events; decisions.md, Webhooks): their bodies and the retry schedule. */
import type { Backoff } from './backoff.ts';
import { summarize } from './envelope.ts';
import type { Hold } from './hold.ts';

export type WebhookEvent = 'hold.approved' | 'hold.rejected' | 'hold.expired';

/** The reference of a published checkpoint: what `id` is for hold events, the receiver's idempotency key. */
export const checkpointReference = (seq: number) => `checkpoint:${seq}`;

/** `evidence.checkpoint`: a signed chain head, published so that someone outside the service keeps it. */
export function checkpointEventBody(
  orgId: string,
  checkpoint: { seq: number; hash: string; signed_at: string; key_id: string; signature: string },
  now: number,
) {
  const { seq, hash, signed_at, key_id, signature } = checkpoint;
  return {
    event: 'evidence.checkpoint' as const,
    created_at: new Date(now).toISOString(),
    id: checkpointReference(seq),
    data: { orgId, seq, hash, signed_at, key_id, signature },
  };
}

/**
 * `evidence.alert`: the workspace's chain failed the check the signer makes before it extends it, and
 * is frozen (`state: "frozen"`, with the break), or an operator re-anchored it (`"reanchored"`).
 */
export function alertEventBody(
  orgId: string,
  /** `execution_refused`: an approved call not run, its hold's record not as its evidence (`hold`). */
  alert: { state: 'frozen' | 'reanchored' | 'execution_refused'; seq: number; reason: string; hold?: string },
  now: number,
) {
  return {
    event: 'evidence.alert' as const,
    created_at: new Date(now).toISOString(),
    id: `alert:${alert.state}:${alert.seq}:${now}`,
    data: { orgId, ...alert },
  };
}

/** `webhook.test`: sent from the app's Webhook page to check a receiver; `id` is its own reference. */
export function testEventBody(orgId: string, eventId: string, now: number) {
  return {
    event: 'webhook.test' as const,
    created_at: new Date(now).toISOString(),
    id: `test:${eventId}`,
    data: { orgId, message: 'A test event sent from the Webhook page. Nothing happened to any hold.' },
  };
}

export const MAX_ATTEMPTS = 25;
/** The waits between a delivery's attempts: 5 s doubling, ±20 % jitter, at most 4 h. */
export const DELIVERY_RETRIES: Backoff = { firstMs: 5_000, longestMs: 4 * 3_600_000, jitter: 0.2 };

/** The event a hold's final state causes; none for auto-allowed, pending or executed holds. */
export function eventOf(hold: Hold): WebhookEvent | null {
  if (hold.status === 'approved') return 'hold.approved';
  if (hold.status === 'rejected') return 'hold.rejected';
  if (hold.status === 'expired') return 'hold.expired';
  return null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Who gave a decision a delegate made: both names (absent on decisions members made themselves). */
export interface DelegatedBy {
  decided_by: string;
  on_behalf_of: string;
}

export function eventBody(event: WebhookEvent, hold: Hold, now: number, delegated?: DelegatedBy) {
  const common = {
    status: hold.status,
    tool_name: hold.toolName,
    summary: summarize(hold.toolName, hold.arguments),
    agent: { id: hold.agentId },
    connection: hold.connection,
  };
  const data =
    event === 'hold.expired'
      ? { ...common, decided_at: null, decision: null, expired_at: iso(hold.expiresAt) }
      : {
          ...common,
          decided_at: iso(hold.decidedAt),
          decision: {
            verdict: hold.verdict,
            reason: hold.reason,
            channel: hold.channel,
            ...delegated,
            // Approved with changes: what to run (docs/rules.md, "Approve with changes").
            ...(hold.changedArguments !== null && { changed_arguments: hold.changedArguments }),
          },
        };
  return { event, created_at: iso(now), id: hold.id, data };
}

/**
 * `hold.reminded` and `hold.escalated`: a pending hold's follow-ups (reminders sent to those who have not
 * decided; approvers added by an escalation step). `id` is the hold's, as for its decision events.
 */
export function followUpEventBody(
  event: 'hold.reminded' | 'hold.escalated',
  hold: Hold,
  now: number,
  detail: Record<string, unknown>,
) {
  return {
    event,
    created_at: iso(now),
    id: hold.id,
    data: {
      status: hold.status,
      tool_name: hold.toolName,
      summary: summarize(hold.toolName, hold.arguments),
      agent: { id: hold.agentId },
      connection: hold.connection,
      expires_at: iso(hold.expiresAt),
      approvals: { required: hold.approvalsRequired, received: hold.approvalsReceived },
      ...detail,
    },
  };
}

/** `delegation.changed`: a member's approvals go to another member for a period, or no longer do. */
export function delegationEventBody(
  orgId: string,
  change: Record<string, unknown>,
  reference: string,
  now: number,
) {
  return {
    event: 'delegation.changed' as const,
    created_at: iso(now),
    id: reference,
    data: { orgId, ...change },
  };
}
