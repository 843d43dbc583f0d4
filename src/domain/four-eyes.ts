/**
 * Four-eyes context: in what capacity a member may decide a hold (themselves, or on behalf of a member
 * who delegated to them), why not, and who the hold waits for. Pure; `recordDecision`
 * (src/services/decide-hold.ts), the app and the notifications all ask `decisionCapacity`, so what the
 * app says before a decision is what the decision answers, and who is asked is who may answer.
 */
import { type Hold, isApprover } from './hold.ts';

/**
 * `own_request`: the hold was requested through an agent identity mapped to the member, or for the
 * member (through a key bound to them, or an OAuth client they allowed).
 */
export type DecisionBlocker = 'viewer' | 'not_an_approver' | 'closed' | 'already_decided' | 'own_request';

/** A member as the decision sees them: their role, groups and the agent identities mapped to them. */
export interface Decider {
  id: string;
  email: string;
  name: string;
  role: string;
  groups: readonly string[];
  agents: readonly string[];
}

/** A decision already recorded on the hold: who acted, and for whom when a delegate acted. */
export interface PastDecision {
  memberId: string;
  onBehalfOf: string | null;
}

export type Capacity =
  | { blocker: DecisionBlocker }
  /** `onBehalfOf`: the member whose approval the delegate gives; null when the member decides as themselves. */
  | { blocker: null; onBehalfOf: Decider | null };

/**
 * `delegators`: the members whose delegation to this member is in force now. Each person counts once
 * on a hold, as actor or as the one acted for: a delegate who decided for someone cannot decide again
 * as themselves, and nobody decides for a member who decided (or was decided for) already.
 * `inOwnClient`: the decision is made in the requesting member's own MCP client, under a rule that
 * says `self_approval` (src/services/client-approval.ts checks that): then, and only then, the member
 * the hold was requested for decides it, as themselves, whoever the rule's approvers are.
 */
export function decisionCapacity(
  hold: Pick<Hold, 'status' | 'expiresAt' | 'approvers' | 'agentId' | 'requestedFor'>,
  member: Decider,
  delegators: readonly Decider[],
  decisions: readonly PastDecision[],
  now: number,
  inOwnClient = false,
): Capacity {
  if (member.role === 'viewer') return { blocker: 'viewer' };
  const approves = (person: Decider) =>
    isApprover(hold.approvers, { email: person.email, role: person.role }, [...person.groups]);
  // Never for a hold requested for nobody (an unbound key): its agent identity names no one for sure.
  const selfApproval = inOwnClient && hold.requestedFor !== null && member.id === hold.requestedFor;
  const self = selfApproval || approves(member);
  const principals = delegators
    .filter((delegator) => delegator.id !== member.id && approves(delegator))
    .sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
  if (!self && principals.length === 0) return { blocker: 'not_an_approver' };
  if (hold.status !== 'pending' || (hold.expiresAt !== null && hold.expiresAt <= now)) {
    return { blocker: 'closed' };
  }
  const counted = new Set(
    decisions.flatMap((d) => (d.onBehalfOf ? [d.memberId, d.onBehalfOf] : [d.memberId])),
  );
  if (counted.has(member.id)) return { blocker: 'already_decided' };
  if (selfApproval) return { blocker: null, onBehalfOf: null };
  const ownRequest = (person: Decider) =>
    person.agents.includes(hold.agentId) || person.id === hold.requestedFor;
  if (ownRequest(member)) return { blocker: 'own_request' };
  if (self) return { blocker: null, onBehalfOf: null };
  const open = principals.filter((principal) => !counted.has(principal.id));
  if (open.length === 0) return { blocker: 'already_decided' };
  const principal = open.find((candidate) => !ownRequest(candidate));
  return principal ? { blocker: null, onBehalfOf: principal } : { blocker: 'own_request' };
}

/** Whether a delegation covers the moment `now`: from its start (inclusive) to its end (exclusive). */
export const delegationInForce = (delegation: { from: number; until: number } | null, now: number) =>
  delegation !== null && delegation.from <= now && now < delegation.until;

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
