/** Where a hold stands, in a few words: the same on the status page, in the app and in messages. */
import { outcomeUnknown } from './envelope.ts';
import { type Hold, type HoldStatus, isWithdrawn } from './hold.ts';

const TEXT: Record<HoldStatus, string> = {
  pending: 'Waiting for a decision',
  approved: 'Approved',
  rejected: 'Rejected',
  expired: 'Expired: no decision before the deadline',
  auto_allowed: 'Allowed by policy',
  executed: 'Approved and carried out',
  failed: 'Approved; carrying it out failed',
};

export function outcomeText(hold: Hold): string {
  // Sent and never answered (envelope.ts): it may or may not have happened.
  if (outcomeUnknown(hold)) return 'Approved; whether it was carried out is unknown';
  if (isWithdrawn(hold)) return 'Withdrawn by the agent before a decision';
  return TEXT[hold.status];
}
