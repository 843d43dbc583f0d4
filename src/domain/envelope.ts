/**
 * What an MCP client sees of a hold (interface.md, "Answer to a held call"): one sentence for the
 * human and the same state as JSON under `service`.
 */
import { type Hold, isWithdrawn } from './hold.ts';
import { summarizeAction } from './summary.ts';

export type EnvelopeStatus =
  'held' | 'approved' | 'executed' | 'denied' | 'expired' | 'error' | 'unknown_reference';

export interface Envelope {
  status: EnvelopeStatus;
  reference: string;
  status_url: string;
  terminal: boolean;
  retryable: boolean;
  retry: 'poll' | 'none' | 'never' | 'new_request';
  message: string;
  action?: { tool: string; arguments: Record<string, unknown>; summary: string };
  expires_at?: string | null;
  deduplicated?: true;
}

const SUMMARY_LENGTH = 200;

/** `send_invoice(amount=1200, to="acme")`, shortened: enough to recognise the action. */
export const summarize = (tool: string, args: Record<string, unknown>): string =>
  summarizeAction(tool, args, SUMMARY_LENGTH).text;

/**
 * Whether the proxy sent the approved call but never got its answer (the server's call timeout, a
 * connection lost mid-request, an instance that died mid-call): it may or may not have happened.
 */
export const outcomeUnknown = (hold: Hold): boolean =>
  hold.execution?.status === 'failed' &&
  (hold.execution.outcome as { outcome?: unknown } | null)?.outcome === 'unknown';

function statusOf(hold: Hold): EnvelopeStatus {
  if (hold.execution?.status === 'executed') return 'executed';
  if (hold.execution?.status === 'failed' || hold.status === 'failed') return 'error';
  switch (hold.status) {
    case 'pending':
      return 'held';
    case 'approved':
    case 'auto_allowed':
      return 'approved';
    case 'executed':
      return 'executed';
    case 'rejected':
      return 'denied';
    default:
      return 'expired';
  }
}

const SHAPE: Record<EnvelopeStatus, Pick<Envelope, 'terminal' | 'retryable' | 'retry'>> = {
  held: { terminal: false, retryable: true, retry: 'poll' },
  approved: { terminal: false, retryable: true, retry: 'poll' },
  executed: { terminal: true, retryable: false, retry: 'none' },
  denied: { terminal: true, retryable: false, retry: 'never' },
  expired: { terminal: true, retryable: true, retry: 'new_request' },
  error: { terminal: true, retryable: true, retry: 'new_request' },
  unknown_reference: { terminal: true, retryable: false, retry: 'none' },
};

function sentence(status: EnvelopeStatus, hold: Hold, summary: string): string {
  switch (status) {
    case 'held':
      return `${summary} is waiting for human approval (reference ${hold.id}). Do not retry it as something else; check back with service_check_status or repeat the identical call.`;
    case 'approved':
      return `${summary} was approved and is being carried out (reference ${hold.id}). Check back with service_check_status.`;
    case 'executed':
      return `${summary} was approved and carried out (reference ${hold.id}); its result follows.`;
    case 'denied':
      return isWithdrawn(hold)
        ? `${summary} was withdrawn before anyone decided: its MCP client cancelled the task (reference ${hold.id}). You may ask again with a new call.`
        : `${summary} was denied${hold.reason ? `: ${hold.reason}` : ''} (reference ${hold.id}). Do not retry it.`;
    case 'expired':
      return `${summary} expired without a decision (reference ${hold.id}). You may ask again with a new call.`;
    default:
      return outcomeUnknown(hold)
        ? `${summary} was approved, but whether it was carried out is unknown: the call was sent and its answer never came (reference ${hold.id}). It may or may not have happened. Do not retry it: a person has to check whether it did (its approvers are told).`
        : `${summary} was approved but could not be carried out (reference ${hold.id}). You may ask again with a new call.`;
  }
}

/** An unknown outcome is final and not to be retried: it may have happened (interface.md: `never`, do not retry). */
const UNKNOWN_SHAPE: Pick<Envelope, 'terminal' | 'retryable' | 'retry'> = {
  terminal: true,
  retryable: false,
  retry: 'never',
};

export function envelopeOf(
  hold: Hold,
  statusUrl: string,
  options: { deduplicated?: boolean } = {},
): Envelope {
  const status = statusOf(hold);
  const summary = summarize(hold.toolName, hold.arguments);
  return {
    status,
    reference: hold.id,
    status_url: statusUrl,
    ...(status === 'error' && outcomeUnknown(hold)
      ? UNKNOWN_SHAPE
      : isWithdrawn(hold)
        ? SHAPE.expired // nobody refused it: a new call may ask again
        : SHAPE[status]),
    message: sentence(status, hold, summary),
    action: { tool: hold.toolName, arguments: hold.arguments, summary },
    expires_at: hold.expiresAt === null ? null : new Date(hold.expiresAt).toISOString(),
    ...(options.deduplicated ? { deduplicated: true as const } : {}),
  };
}

export function unknownReference(reference: string, statusUrl: string): Envelope {
  return {
    status: 'unknown_reference',
    reference,
    status_url: statusUrl,
    ...SHAPE.unknown_reference,
    message: `There is no action with reference ${reference} in this workspace.`,
  };
}

/** The two text blocks of a held (or checked) call. */
export const envelopeContent = (envelope: Envelope) => [
  { type: 'text' as const, text: envelope.message },
  { type: 'text' as const, text: JSON.stringify({ service: envelope }) },
];
