/**
 * Four-eyes context: why a member cannot decide a hold, and who the hold waits for. Pure; the checks
 * are those of `recordDecision` (src/services/decide-hold.ts), in its order, so what the app says
 * before a decision is what the decision would answer.
 */
import { type Hold, isApprover } from './hold.ts';

export type DecisionBlocker = 'viewer' | 'not_an_approver' | 'closed' | 'already_decided';

export function decisionBlocker(
  hold: Pick<Hold, 'status' | 'expiresAt' | 'approvers'>,
  member: { email: string; role: string },
  groupsOfMember: string[],
  decidedByMember: boolean,
  now: number,
): DecisionBlocker | null {
  if (member.role === 'viewer') return 'viewer';
  if (!isApprover(hold.approvers, member, groupsOfMember)) return 'not_an_approver';
  if (hold.status !== 'pending' || (hold.expiresAt !== null && hold.expiresAt <= now)) return 'closed';
  return decidedByMember ? 'already_decided' : null;
}

/** `role:admin`, `group:finance`, `bob@acme.test` as a person says them: `an admin or finance or bob@acme.test`. */
export function approversInWords(approvers: readonly string[]): string {
  const words = approvers.map((approver) =>
    approver.startsWith('role:')
      ? `an ${approver.slice(5)}`
      : approver.startsWith('group:')
        ? approver.slice(6)
        : approver,
  );
  if (words.length === 0) return 'an admin';
  // A long list of e-mails would fill a subject line: the first two name who it is about.
  if (words.length > 3) return `${words.slice(0, 2).join(', ')} or ${words.length - 2} others`;
  return words.join(' or ');
}

/** `1 of 2 approvals, waiting for finance`; for a hold that needs one approval `waiting for finance`. */
export function fourEyesLine(hold: Pick<Hold, 'approvers' | 'approvalsRequired' | 'approvalsReceived'>) {
  const waiting = `waiting for ${approversInWords(hold.approvers)}`;
  return hold.approvalsRequired > 1
    ? `${hold.approvalsReceived} of ${hold.approvalsRequired} approvals, ${waiting}`
    : waiting;
}
