/**
 * "I'm on it" (issue 39): a member claims a pending hold, and the others see it, so that three approvers
 * do not work on the same holds. A claim lasts the hold's rule's `claim.minutes` (default 30) and ends
 * sooner when the claimer or an admin releases it, or when the hold is decided. While it lasts, and when
 * the rule says `claim.halts_escalation`, the hold's escalation steps wait (follow-ups.ts), as an
 * acknowledged page halts its escalation. Claiming and releasing are evidenced (`hold.claimed`,
 * `hold.released`); a claim that runs out needs no entry, as the claim's says until when it lasts.
 */
import type { DecisionBlocker } from '../domain/four-eyes.ts';
import type { Sql } from '../store/db.ts';
import { deleteClaim, deleteEndedClaims, listLiveClaims, saveClaim } from '../store/claims.ts';
import { findFollowUp, updateFollowUp } from '../store/follow-ups.ts';
import { listPastDecisions } from '../store/hold-decisions.ts';
import { findHold } from '../store/holds.ts';
import type { Member } from '../store/members.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { notFound } from './errors.ts';
import { openChain } from './evidence.ts';

export const DEFAULT_CLAIM_MINUTES = 30;

/** A live claim as the others see it. */
export interface ClaimShown {
  memberId: string;
  name: string;
  until: number;
}

export type ClaimResult =
  | { outcome: 'claimed'; claim: ClaimShown }
  /** Another member's claim is live: theirs stands. */
  | { outcome: 'taken'; claim: ClaimShown }
  /** The member may not decide this hold (so not claim it either), or it no longer waits. */
  | { outcome: 'refused'; blocker: DecisionBlocker };

export type ReleaseResult =
  | { outcome: 'released' }
  /** No live claim to release. */
  | { outcome: 'none' }
  /** Another member's claim, and the member is no admin. */
  | { outcome: 'not_yours'; claim: ClaimShown };

type HoldOfMember = { workspaceId: string; holdId: string; memberId: string };

const shown = (claim: ClaimShown): ClaimShown => ({
  memberId: claim.memberId,
  name: claim.name,
  until: claim.until,
});
const person = (member: Member) => ({ id: member.id, email: member.email, name: member.name });

/**
 * What a claim or a release starts from, in its transaction and under the workspace's chain lock: the
 * hold, its deciders, the member (undefined when no longer one of them) and the hold's live claim.
 */
async function openHold(tx: Sql, ctx: ServiceContext, input: HoldOfMember) {
  const chain = await openChain(tx, ctx, input.workspaceId);
  const hold = await findHold(tx, input.workspaceId, input.holdId, true);
  if (!hold) throw notFound('hold');
  const deciders = await loadDeciders(tx, input.workspaceId);
  const now = ctx.now();
  const [live] = await listLiveClaims(tx, input.workspaceId, [hold.id], now);
  return { chain, hold, deciders, member: deciders.byId.get(input.memberId), live, now };
}

/**
 * The member claims the hold (or renews their claim) until now plus the rule's minutes. Only a member
 * who may decide it now may claim it; another member's live claim stands.
 */
export async function claimHold(ctx: ServiceContext, input: HoldOfMember): Promise<ClaimResult> {
  const result = await ctx.db.transaction(async (tx): Promise<ClaimResult> => {
    const { chain, hold, deciders, member, live, now } = await openHold(tx, ctx, input);
    const blocker = member
      ? deciders.capacity(hold, member, await listPastDecisions(tx, hold.id), now).blocker
      : 'not_an_approver';
    if (!member || blocker !== null) return { outcome: 'refused', blocker: blocker ?? 'not_an_approver' };
    if (live && live.memberId !== member.id) return { outcome: 'taken', claim: shown(live) };
    const { rules } = await findRuleSet(tx, input.workspaceId);
    const rule = rules.find((candidate) => hold.ruleName !== null && candidate.name === hold.ruleName);
    const until = now + (rule?.claim?.minutes ?? DEFAULT_CLAIM_MINUTES) * 60_000;
    const haltsEscalation = rule?.claim?.halts_escalation === true;
    await deleteEndedClaims(tx, input.workspaceId, now);
    await saveClaim(tx, {
      holdId: hold.id,
      workspaceId: input.workspaceId,
      memberId: member.id,
      claimedAt: now,
      until,
      haltsEscalation,
    });
    await chain.append('hold.claimed', {
      hold: hold.id,
      member: person(member),
      until: new Date(until).toISOString(),
      halts_escalation: haltsEscalation,
    });
    return { outcome: 'claimed', claim: { memberId: member.id, name: member.name, until } };
  });
  if (result.outcome === 'claimed') ctx.holdEvents.publish(input.holdId, input.workspaceId);
  return result;
}

/**
 * The claimer, or an admin, releases the hold's live claim. Escalation the claim held back goes on at
 * once: the hold's follow-ups are due now.
 */
export async function releaseHold(ctx: ServiceContext, input: HoldOfMember): Promise<ReleaseResult> {
  const result = await ctx.db.transaction(async (tx): Promise<ReleaseResult> => {
    const { chain, hold, deciders, member, live, now } = await openHold(tx, ctx, input);
    if (!live) return { outcome: 'none' };
    if (!member || (live.memberId !== member.id && member.role !== 'admin'))
      return { outcome: 'not_yours', claim: shown(live) };
    await deleteClaim(tx, input.workspaceId, hold.id);
    const claimer = deciders.byId.get(live.memberId);
    await chain.append('hold.released', {
      hold: hold.id,
      member: person(member),
      ...(live.memberId !== member.id && claimer ? { claimed_by: person(claimer) } : {}),
    });
    if (live.haltsEscalation) await resumeFollowUps(tx, input.workspaceId, hold.id, now);
    return { outcome: 'released' };
  });
  if (result.outcome === 'released') ctx.holdEvents.publish(input.holdId, input.workspaceId);
  return result;
}

async function resumeFollowUps(tx: Sql, workspaceId: string, holdId: string, now: number) {
  const row = await findFollowUp(tx, workspaceId, holdId);
  if (row && row.nextAt !== null && row.nextAt > now) await updateFollowUp(tx, { ...row, nextAt: now });
}

/** The live claims of these holds (pending ones), by hold: for the inbox's lines and a hold's page. */
export async function claimsOf(
  ctx: ServiceContext,
  workspaceId: string,
  holdIds: readonly string[],
): Promise<Map<string, ClaimShown>> {
  const claims = await listLiveClaims(ctx.db, workspaceId, holdIds, ctx.now());
  return new Map(claims.map((claim) => [claim.holdId, shown(claim)]));
}

/**
 * Until when the hold's escalation waits for a live claim whose rule said `claim.halts_escalation`;
 * null when it does not wait. Read by the follow-ups inside their transaction.
 */
export async function escalationHaltedUntil(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  now: number,
): Promise<number | null> {
  const [live] = await listLiveClaims(sql, workspaceId, [holdId], now);
  return live?.haltsEscalation ? live.until : null;
}
