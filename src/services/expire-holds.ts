/** Deadlines: a pending hold past `expires_at` becomes expired, with its evidence entry. */
import { expireHold as expired, type Hold } from '../domain/hold.ts';
import { listOverdueHolds } from '../store/hold-sweeps.ts';
import { findHold, updateHoldState } from '../store/holds.ts';
import type { ServiceContext } from './context.ts';
import { openChain } from './evidence.ts';
import { notifyChange } from './notifications.ts';
import { emitHoldEvent } from './webhooks.ts';

/** Expires the hold if it is pending and overdue; returns the hold as it now stands. */
export async function expireIfOverdue(
  ctx: ServiceContext,
  workspaceId: string,
  holdId: string,
): Promise<Hold | undefined> {
  const changed = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspaceId);
    const hold = await findHold(tx, workspaceId, holdId, true);
    if (hold?.status !== 'pending' || hold.expiresAt === null || hold.expiresAt > ctx.now()) return hold;
    const next = expired(hold);
    await updateHoldState(tx, next);
    await emitHoldEvent(tx, ctx, next);
    await notifyChange(tx, ctx, next);
    await chain.append('hold.expired', { hold: hold.id, expires_at: new Date(hold.expiresAt).toISOString() });
    return next;
  });
  if (changed?.status === 'expired') ctx.holdEvents.publish(holdId, workspaceId);
  return changed;
}

/** One sweep of the deadline worker; returns how many holds it looked at. */
export async function expireOverdueHolds(ctx: ServiceContext, batch = 100): Promise<number> {
  const overdue = await listOverdueHolds(ctx.db, ctx.now(), batch);
  for (const { id, workspaceId } of overdue) await expireIfOverdue(ctx, workspaceId, id);
  return overdue.length;
}
