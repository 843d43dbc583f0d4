/**
 * Out of office: when a member's delegation comes into force, the holds already waiting for them are
 * handed to their delegate, who is asked for each on their channels (holds that arrive later go to the
 * delegate at once: notifications.ts `waitingFor`). The deadline worker runs the sweep; each member's
 * handover is done once, in one transaction under the workspace's chain lock.
 */
import { findHold, listPendingLines, pendingDecisions } from '../store/holds.ts';
import { insertFollowUpEvent } from '../store/follow-ups.ts';
import { listDueHandovers, markHandedOver } from '../store/members.ts';
import { pendingHoldsAskedOf } from '../store/notifications.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { openChain } from './evidence.ts';
import { WAITING_CAP } from './inbox.ts';
import { askMembers } from './notifications.ts';

/**
 * One sweep: hands over the waiting holds of up to `batch` members whose delegation came into force;
 * returns how many it looked at. One that fails is tried again next time and holds up no other; the
 * first failure is thrown at the end, for the worker's log.
 */
export async function runDueHandovers(ctx: ServiceContext, batch = 100): Promise<number> {
  const due = await listDueHandovers(ctx.db, ctx.now(), batch);
  let failure: unknown = null;
  for (const { workspaceId, memberId } of due) {
    await handOver(ctx, workspaceId, memberId).catch((error: unknown) => (failure ??= error));
  }
  if (failure) throw failure;
  return due.length;
}

async function handOver(ctx: ServiceContext, workspaceId: string, memberId: string): Promise<void> {
  const handed = await ctx.db.transaction(async (tx) => {
    // The lock keeps decisions and submissions out while the holds are looked at.
    const chain = await openChain(tx, ctx, workspaceId);
    const now = ctx.now();
    if (!(await markHandedOver(tx, workspaceId, memberId, now))) return []; // another instance was first
    const deciders = await loadDeciders(tx, workspaceId);
    const member = deciders.byId.get(memberId);
    // With the delegate away too, the member is still the one asked.
    const delegate = member && deciders.delegateOf(member, now);
    if (!member || !delegate) return [];
    const lines = await listPendingLines(tx, workspaceId, WAITING_CAP);
    const decisions = await pendingDecisions(tx, workspaceId);
    const asked = await pendingHoldsAskedOf(tx, workspaceId, delegate.id);
    // Holds the member may still decide and the delegate may decide in their place, not yet asked of
    // the delegate (not their own agent's, not one they decide in their own right).
    const handed = lines.filter((line) => {
      if (asked.has(line.id)) return false;
      const hold = { ...line, status: 'pending' as const };
      const past = decisions.get(line.id) ?? [];
      const instead = deciders.capacity(hold, delegate, past, now);
      return (
        deciders.capacity(hold, member, past, now).blocker === null &&
        instead.blocker === null &&
        instead.onBehalfOf?.id === member.id
      );
    });
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
