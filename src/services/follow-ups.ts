/**
 * Reminders and escalation of pending holds. The plan is fixed at submission (`followUpStatement`);
 * the deadline worker sweeps `dueFollowUpWork`, and each hold's follow-ups that came due are acted on in
 * one transaction under the workspace's chain lock: approvers added, requests and reminders queued
 * for the members' channels, evidence entries, webhook events and the log the hold's page shows.
 */
import {
  dueFollowUps,
  type EscalationDefinition,
  type FollowUpPlan,
  type FollowUpState,
  followUpPlan,
  nextFollowUpAt,
  nextReminderAt,
  type RemindDefinition,
} from '../domain/follow-ups.ts';
import type { Hold } from '../domain/hold.ts';
import type { Outcome } from '../domain/policy.ts';
import { listHoldDecisions } from '../store/hold-decisions.ts';
import { findHold } from '../store/holds.ts';
import {
  findFollowUp,
  insertFollowUpEvent,
  insertFollowUpStatement,
  listDueFollowUps,
  recordFollowUpFailures,
  updateFollowUp,
  updateHoldApprovers,
} from '../store/follow-ups.ts';
import type { Statement } from '../store/statements.ts';
import { writeTogether } from '../store/statements.ts';
import type { Workspace } from '../store/workspaces.ts';
import { escalationHaltedUntil } from './claims.ts';
import type { ServiceContext } from './context.ts';
import type { DueWork } from './due-work.ts';
import { openChain } from './evidence.ts';
import { askMembers, waitingFor } from './notifications.ts';
import { emitFollowUpEvent } from './webhooks.ts';

/**
 * A pending hold's follow-ups as the file wrote them: its deciding rule's reminders (or the workspace's
 * default ones) and escalation steps; null when it has none.
 */
export function followUpsOf(
  outcome: Outcome,
  workspace: Workspace,
): { remind: RemindDefinition | null; escalate: EscalationDefinition[] } | null {
  const remind =
    outcome.remind ?? (workspace.remind ? (JSON.parse(workspace.remind) as RemindDefinition) : null);
  return remind || outcome.escalate.length > 0 ? { remind, escalate: outcome.escalate } : null;
}

/** The row that schedules a new pending hold's follow-ups; null when none can come before its deadline. */
export function followUpStatement(hold: Hold, followUps: ReturnType<typeof followUpsOf>): Statement | null {
  const plan = followUps && followUpPlan(followUps.remind, followUps.escalate);
  if (!plan || hold.status !== 'pending' || hold.expiresAt === null) return null;
  const window = { createdAt: hold.createdAt, expiresAt: hold.expiresAt };
  const nextAt = nextFollowUpAt(plan, window, { escalationsDone: 0, remindedAt: null });
  return nextAt === null
    ? null
    : insertFollowUpStatement({ holdId: hold.id, workspaceId: hold.workspaceId, plan, nextAt });
}

/** Holds whose follow-ups came due: one whose follow-up fails is tried again later (due-work.ts). */
export const dueFollowUpWork: DueWork<{ holdId: string; workspaceId: string; failures: number }> = {
  listDue: (ctx, now, limit) => listDueFollowUps(ctx.db, now, limit),
  run: (ctx, { workspaceId, holdId }) => followUp(ctx, workspaceId, holdId),
  recordFailures: (ctx, { workspaceId, holdId }, failures, retryAt) =>
    recordFollowUpFailures(ctx.db, workspaceId, holdId, failures, retryAt),
};

/** While escalation waits for a claim, the follow-ups run next at the next reminder or the claim's end. */
const nextWhileHalted = (
  plan: FollowUpPlan,
  window: { createdAt: number; expiresAt: number },
  state: FollowUpState,
  until: number,
) => Math.min(until, nextReminderAt(plan, window, state.remindedAt ?? window.createdAt) ?? Infinity);

async function followUp(ctx: ServiceContext, workspaceId: string, holdId: string): Promise<void> {
  const changed = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspaceId);
    const row = await findFollowUp(tx, workspaceId, holdId);
    const hold = await findHold(tx, workspaceId, holdId, true);
    const now = ctx.now();
    if (!row || row.nextAt === null || row.nextAt > now) return false; // another instance was first
    // A hold decided or past its deadline has nothing left to follow up.
    if (!hold || hold.status !== 'pending' || hold.expiresAt === null || hold.expiresAt <= now) {
      await updateFollowUp(tx, { ...row, nextAt: null });
      return false;
    }
    const window = { createdAt: hold.createdAt, expiresAt: hold.expiresAt };
    const due = dueFollowUps(row.plan, window, row, now);
    // A claim whose rule says so halts escalation, as an acknowledged page does: its steps wait until
    // the claim is released or runs out (then the ones that came due are taken), reminders go on.
    const haltedUntil = await escalationHaltedUntil(tx, workspaceId, hold.id, now);
    const steps = haltedUntil === null ? due.steps : [];
    const decisions = await listHoldDecisions(tx, hold.id);
    let current = hold;
    const asked = new Set<string>();
    for (const step of steps) {
      const { to, after } = row.plan.escalate[step]!;
      const before = new Set((await waitingFor(tx, ctx, current, decisions)).map((member) => member.id));
      const added = to.filter(
        (approver) => !current.approvers.some((a) => a.toLowerCase() === approver.toLowerCase()),
      );
      current = { ...current, approvers: [...current.approvers, ...added] };
      await updateHoldApprovers(tx, workspaceId, hold.id, current.approvers);
      // Those the step brings in are asked now; who was asked before is not asked again.
      const newcomers = (await waitingFor(tx, ctx, current, decisions)).filter(
        (member) => !before.has(member.id),
      );
      await writeTogether(
        tx,
        ctx.db.dialect,
        await askMembers(tx, ctx, current, newcomers, 'request', 'escalated'),
      );
      for (const member of newcomers) asked.add(member.id);
      const detail = {
        step: step + 1,
        after_minutes: after / 60_000,
        added,
        approvers: current.approvers,
        notified: newcomers.map((member) => member.email),
      };
      await chain.append('hold.escalated', { hold: hold.id, ...detail });
      await insertFollowUpEvent(tx, { holdId: hold.id, workspaceId, at: now, kind: 'escalation', detail });
      await emitFollowUpEvent(tx, ctx, current, 'hold.escalated', detail);
    }
    if (due.remind) {
      const reminded = (await waitingFor(tx, ctx, current, decisions)).filter(
        (member) => !asked.has(member.id),
      );
      if (reminded.length > 0) {
        await writeTogether(tx, ctx.db.dialect, await askMembers(tx, ctx, current, reminded, 'reminder'));
        const detail = {
          reminded: reminded.map((member) => member.email),
          approved_by: decisions.filter((d) => d.verdict === 'approve').map((d) => d.email),
          seconds_left: Math.round((hold.expiresAt - now) / 1000),
        };
        await chain.append('hold.reminded', { hold: hold.id, ...detail });
        await insertFollowUpEvent(tx, { holdId: hold.id, workspaceId, at: now, kind: 'reminder', detail });
        await emitFollowUpEvent(tx, ctx, current, 'hold.reminded', detail);
      }
    }
    const state = {
      escalationsDone: row.escalationsDone + steps.length,
      remindedAt: due.remind ? now : row.remindedAt,
    };
    await updateFollowUp(tx, {
      workspaceId,
      holdId: hold.id,
      ...state,
      nextAt:
        haltedUntil === null
          ? nextFollowUpAt(row.plan, window, state)
          : nextWhileHalted(row.plan, window, state, haltedUntil),
    });
    return steps.length > 0 || due.remind;
  });
  // The app's pages and the notification worker hear of it at once.
  if (changed) ctx.holdEvents.publish(holdId, workspaceId);
}
