/**
 * Out of office: when a member's delegation comes into force, the holds already waiting for them are
 * handed to their delegate, who is asked for each on their channels (holds that arrive later go to the
 * delegate at once: notifications.ts `waitingFor`). The deadline worker sweeps `dueHandoverWork`; each member's
 * handover is done once, in one transaction under the workspace's chain lock.
 */
import { pendingDecisions } from '../store/hold-decisions.ts';
import { listPendingLines } from '../store/hold-lines.ts';
import { findHold } from '../store/holds.ts';
import { insertFollowUpEvent, pendingHoldsHandedTo } from '../store/follow-ups.ts';
import { listDueHandovers, markHandedOver, recordHandoverFailures } from '../store/members.ts';
import { pendingHoldsAskedOf } from '../store/notifications.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import type { DueWork } from './due-work.ts';
import { openChain } from './evidence.ts';
import { WAITING_CAP } from './inbox.ts';
import { askMembers } from './notifications.ts';

/** At most this many holds are handed over in one transaction; the rest in the next sweeps. */
const HOLDS_PER_TRANSACTION = 100;

/**
 * Members whose delegation came into force: their waiting holds are handed over. One whose handover
 * fails is tried again later (due-work.ts).
 */
export const dueHandoverWork: DueWork<{ workspaceId: string; memberId: string; failures: number }> = {
  listDue: (ctx, now, limit) => listDueHandovers(ctx.db, now, limit),
  run: (ctx, { workspaceId, memberId }) => handOver(ctx, workspaceId, memberId),
  recordFailures: (ctx, { workspaceId, memberId }, failures, retryAt) =>
    recordHandoverFailures(ctx.db, workspaceId, memberId, failures, retryAt),
};

/**
 * Up to HOLDS_PER_TRANSACTION of the member's waiting holds handed to their delegate, in one
 * transaction under the workspace's lock (which keeps decisions and submissions out meanwhile); the
 * member is marked handed over with the last of them.
 */
async function handOver(ctx: ServiceContext, workspaceId: string, memberId: string): Promise<void> {
  const handed = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspaceId);
    const now = ctx.now();
    const deciders = await loadDeciders(tx, workspaceId);
    const member = deciders.byId.get(memberId);
    const delegate = member && deciders.delegateOf(member, now);
    // Changed meanwhile (the sweep leaves out delegates who are away): nothing to hand over now.
    if (!member || !delegate) return [];
    const lines = await listPendingLines(tx, workspaceId, WAITING_CAP);
    const decisions = await pendingDecisions(tx, workspaceId);
    const asked = await pendingHoldsAskedOf(tx, workspaceId, delegate.id);
    const handedBefore = await pendingHoldsHandedTo(tx, workspaceId, delegate.email);
    // Holds the member may still decide and the delegate may decide in their place, not yet asked of
    // or handed to the delegate (not their own agent's, not one they decide in their own right).
    const due = lines.filter((line) => {
      if (asked.has(line.id) || handedBefore.has(line.id)) return false;
      const hold = { ...line, status: 'pending' as const };
      const past = decisions.get(line.id) ?? [];
      const instead = deciders.capacity(hold, delegate, past, now);
      return (
        deciders.capacity(hold, member, past, now).blocker === null &&
        instead.blocker === null &&
        instead.onBehalfOf?.id === member.id
      );
    });
    const handed = due.slice(0, HOLDS_PER_TRANSACTION);
    if (due.length === handed.length && !(await markHandedOver(tx, workspaceId, memberId, now))) return [];
    const until = member.delegation!.until;
    for (const line of handed) {
      const hold = (await findHold(tx, workspaceId, line.id))!;
      await writeTogether(tx, ctx.db.dialect, await askMembers(tx, ctx, hold, [delegate], 'request'));
      const names = { member: member.email, delegate: delegate.email };
      await chain.append('hold.handed_over', {
        hold: hold.id,
        ...names,
        until: new Date(until).toISOString(),
      });
      const detail = { ...names, until };
      await insertFollowUpEvent(tx, { holdId: hold.id, workspaceId, at: now, kind: 'handover', detail });
    }
    return handed.map((line) => line.id);
  });
  // The notification worker and the app's pages hear of it at once.
  for (const holdId of handed) ctx.holdEvents.publish(holdId, workspaceId);
}
