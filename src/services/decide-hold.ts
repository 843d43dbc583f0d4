/**
 * A human approver decides a pending hold (inbox, e-mail link, SMS, Slack, widget), or the requesting
 * member in their own MCP client where the rule lets them (`mcp_client`).
 */
import { applyDecision, type DecisionChannel, type Hold, type Verdict } from '../domain/hold.ts';
import type { Sql } from '../store/db.ts';
import { markActed } from '../store/members.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import { findWorkspace } from '../store/workspaces.ts';
import { insertHoldDecision, listPastDecisions, supersedeDecisions } from '../store/hold-decisions.ts';
import {
  approvalSeqsOf,
  findHold,
  setApprovalSeqs,
  setApprovedSeq,
  updateHoldState,
} from '../store/holds.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { checkShown, decisionEdit } from './decision-changes.ts';
import { invalid, notFound } from './errors.ts';
import { type Chain, openChain } from './evidence.ts';
import { expireIfOverdue } from './expire-holds.ts';
import { notifyChange } from './notifications.ts';
import { checkDecisionPasskey, passkeyRequired } from './passkeys.ts';
import { emitHoldEvent } from './webhooks.ts';
import { inSpan } from '../telemetry/tracing.ts';

export const MAX_COMMENT = 2000;

export interface DecisionInput {
  workspaceId: string;
  holdId: string;
  memberId: string;
  verdict: Verdict;
  comment?: string | null;
  channel: Exclude<DecisionChannel, 'rule' | 'agent'>;
  /**
   * The member's WebAuthn assertion over the action (`decisionChallenge`), as an object or its JSON text;
   * required where a rule or the workspace says so.
   */
  passkey?: unknown;
  /** Decided together with other holds (the inbox's bulk decisions): said in the evidence entry. */
  bulk?: boolean;
  /**
   * An approval with changes: argument path → new value, only paths the hold's rule lists as
   * `editable` (decision-changes.ts).
   */
  changes?: Record<string, unknown>;
  /**
   * The hash of the arguments the member was shown (`shownArgumentsHash`), from a page that offers
   * changes: an approval of a call changed since is refused (decision-changes.ts).
   */
  shown?: string;
}

export type DecisionResult =
  | { outcome: 'recorded'; hold: Hold }
  /** The hold was already approved, rejected or expired (now, if its deadline just passed). */
  | { outcome: 'closed'; hold: Hold }
  | { outcome: 'not_an_approver'; hold: Hold }
  /** This member has decided this hold before (or was decided for by their delegate); a member counts once. */
  | { outcome: 'already_decided'; hold: Hold }
  /** The hold was requested through an agent identity mapped to this member: someone else decides it. */
  | { outcome: 'own_request'; hold: Hold }
  /**
   * An approval while the workspace is frozen (the kill switch): refused, so that no agent acts on one;
   * the hold stays pending, and a rejection is still recorded.
   */
  | { outcome: 'frozen'; hold: Hold };

/** Traced as `hold decide`. */
export const decideHold = (ctx: ServiceContext, input: DecisionInput) =>
  inSpan('hold decide', { 'hold.id': input.holdId }, () => decideUntraced(ctx, input));

async function decideUntraced(ctx: ServiceContext, input: DecisionInput): Promise<DecisionResult> {
  const result = await ctx.db.transaction(async (tx) =>
    recordDecision(tx, ctx, await openChain(tx, ctx, input.workspaceId), input),
  );
  return settleDecision(ctx, input, result);
}

/** The decision inside the caller's transaction, which holds the workspace's chain. */
export async function recordDecision(
  tx: Sql,
  ctx: ServiceContext,
  chain: Chain,
  input: DecisionInput,
): Promise<DecisionResult> {
  const comment = input.comment?.trim() || null;
  if (comment && comment.length > MAX_COMMENT)
    throw invalid('comment', `must be at most ${MAX_COMMENT} characters`);
  const hold = await findHold(tx, input.workspaceId, input.holdId, true);
  if (!hold) throw notFound('hold');
  const deciders = await loadDeciders(tx, input.workspaceId);
  const member = deciders.byId.get(input.memberId);
  if (!member) return { outcome: 'not_an_approver', hold };
  const now = ctx.now();
  // The member used a credential of theirs (a session, their decision link, their Slack or Teams user,
  // their phone and reply code): from now on no sign-in link for them is shown to anyone and only they
  // change their addresses (issue 37). Marked here, where every channel's decision passes, rather than
  // read back from hold_decisions: a decision that comes too late records nothing but proves as much.
  await markActed(tx, member, now);
  const inOwnClient = input.channel === 'mcp_client' && (await selfApprovalAllowed(tx, hold));
  const past = await listPastDecisions(tx, hold.id);
  const capacity = deciders.capacity(hold, member, past, now, inOwnClient);
  if (capacity.blocker !== null)
    return { outcome: capacity.blocker === 'viewer' ? 'not_an_approver' : capacity.blocker, hold };
  if (await approvalWhileFrozen(tx, input)) return { outcome: 'frozen', hold };
  const principal = capacity.onBehalfOf;
  // Throws, before anything is stored, when the changes are not the rule's to allow, or the member
  // would approve a call changed since it was shown to them.
  checkShown(hold, input);
  const edit = await decisionEdit(tx, hold, input.verdict, input.changes);
  // Throws, before anything is stored, when a required signature is missing or does not verify: over
  // the call as it would run, changes included.
  const signature = await checkDecisionPasskey(
    tx,
    ctx,
    edit ? { ...hold, changedArguments: edit.changedArguments } : hold,
    member,
    input.verdict,
    input.passkey,
  );
  // An edit restarts four eyes: the approvals of the call before it no longer count (nor block).
  if (edit) await supersedeDecisions(tx, hold.id);
  await insertHoldDecision(tx, {
    ...input,
    comment,
    at: now,
    holdId: hold.id,
    memberId: member.id,
    onBehalfOf: principal?.id ?? null,
  });
  const next = applyDecision(hold, {
    verdict: input.verdict,
    comment,
    channel: input.channel,
    at: now,
    ...(edit && { changedArguments: edit.changedArguments }),
  });
  await updateHoldState(tx, next);
  await emitHoldEvent(
    tx,
    ctx,
    next,
    principal ? { decided_by: member.email, on_behalf_of: principal.email } : undefined,
  );
  await notifyChange(tx, ctx, next);
  const type = next.status === 'pending' ? 'hold.approval_recorded' : `hold.${next.status}`;
  // With four eyes and more, the approvals so far are entries too: `hold.approved` lists them.
  const counted = next.approvalsRequired > 1 && input.verdict === 'approve';
  const before = counted && !edit ? await approvalSeqsOf(tx, hold.workspaceId, hold.id) : [];
  const entry = await chain.append(type, {
    hold: hold.id,
    member: { id: member.id, email: member.email, name: member.name },
    // A delegate's decision names both: who decided, and whose approval it stands for.
    ...(principal
      ? { on_behalf_of: { id: principal.id, email: principal.email, name: principal.name } }
      : {}),
    verdict: input.verdict,
    comment,
    channel: input.channel,
    ...(input.bulk ? { bulk: true } : {}),
    ...edit?.evidence,
    approvals: { required: next.approvalsRequired, received: next.approvalsReceived },
    // The seqs of the earlier approvals' `hold.approval_recorded` entries (hold-evidence.ts checks them).
    ...(counted && next.status === 'approved' ? { approvals_before: before } : {}),
    // The assertion the member's passkey made over this action: checkable offline (docs/evidence.md).
    ...(signature ? { passkey: signature } : {}),
  });
  // Where the approval is: an approved hold is answered, and its call run, only with it (hold-evidence.ts).
  if (next.status === 'approved') await setApprovedSeq(tx, hold.workspaceId, hold.id, entry.seq);
  else if (counted) await setApprovalSeqs(tx, hold.workspaceId, hold.id, [...before, entry.seq]);
  return { outcome: 'recorded', hold: next };
}

/** Read under the chain's lock, which a freeze takes too: an approval either precedes it or is refused. */
const approvalWhileFrozen = async (tx: Sql, input: DecisionInput) =>
  input.verdict === 'approve' && (await findWorkspace(tx, input.workspaceId))?.frozenAt != null;

/**
 * Whether the member a hold was requested for may decide it in their own MCP client (docs/rules.md,
 * "Approval in the client"): its rule says `self_approval`, it needs one approval, and no passkey
 * signature (the rule's `signed`, or the workspace's), which a client cannot give. Read when the
 * decision is made, from the rules in force; a hold requested for nobody never is.
 */
export async function selfApprovalAllowed(sql: Sql, hold: Hold): Promise<boolean> {
  if (hold.requestedFor === null || hold.ruleName === null || hold.approvalsRequired !== 1) return false;
  const { rules } = await findRuleSet(sql, hold.workspaceId);
  const rule = rules.find((candidate) => candidate.name === hold.ruleName);
  return rule?.self_approval === true && !(await passkeyRequired(sql, hold));
}

/** After the commit: a hold found past its deadline expires; waiters and the app hear of a change. */
export async function settleDecision(
  ctx: ServiceContext,
  input: { workspaceId: string; holdId: string },
  result: DecisionResult,
): Promise<DecisionResult> {
  if (result.outcome === 'closed' && result.hold.status === 'pending') {
    const hold = (await expireIfOverdue(ctx, input.workspaceId, input.holdId)) ?? result.hold;
    return { outcome: 'closed', hold };
  }
  if (result.outcome === 'recorded') ctx.holdEvents.publish(input.holdId, input.workspaceId);
  return result;
}
