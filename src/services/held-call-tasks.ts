/**
 * Held MCP calls as tasks (src/domain/held-task.ts): a task is read, awaited and cancelled by the
 * client of the MCP server that made it, with a key of its workspace. Cancelling withdraws the hold:
 * closed as the agent's rejection, with its evidence entry, webhook event and the approvers told, in
 * one transaction.
 */
import { heldTask, type HeldTask } from '../domain/held-task.ts';
import { type Hold, withdrawHold } from '../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN } from '../domain/ids.ts';
import { findHold, updateHoldState } from '../store/holds.ts';
import type { ServiceContext } from './context.ts';
import { openChain } from './evidence.ts';
import { expireIfOverdue } from './expire-holds.ts';
import { notifyChange } from './notifications.ts';
import { answerFor, callKeyOf, type ProxyCaller } from './proxy-call.ts';
import { getHold } from './read-hold.ts';
import { statusUrl } from './submit-hold.ts';
import { emitHoldEvent } from './webhooks.ts';

export const taskOf = (ctx: ServiceContext, hold: Hold): HeldTask =>
  heldTask(hold, answerFor(ctx, hold), statusUrl(ctx, hold.id));

/**
 * The hold behind a task id, if this caller made the call: through its MCP server, with its credential
 * and scope (the call's key, proxy-call.ts). A reference is shared freely (status links), a task is not.
 */
async function heldCall(ctx: ServiceContext, caller: ProxyCaller, taskId: string): Promise<Hold | null> {
  if (!HOLD_REFERENCE_PATTERN.test(taskId)) return null;
  const hold = await findHold(ctx.db, caller.workspace.id, taskId);
  if (!hold || hold.mcpServerId !== caller.server.id) return null;
  if (hold.callKey !== callKeyOf(caller, hold.toolName, hold.arguments)) return null;
  // Read through getHold: a hold past its deadline is expired first, never shown as working.
  return getHold(ctx, hold.workspaceId, hold.id);
}

export async function findHeldTask(ctx: ServiceContext, caller: ProxyCaller, taskId: string) {
  const hold = await heldCall(ctx, caller, taskId);
  return hold && taskOf(ctx, hold);
}

/**
 * The task once it is no longer working (decided, expired, carried out), or as it is when the client
 * goes away or the service stops. Woken by every change to the hold, on any instance.
 */
export async function settledHeldTask(
  ctx: ServiceContext,
  caller: ProxyCaller,
  taskId: string,
  signal: AbortSignal,
): Promise<HeldTask | null> {
  for (;;) {
    // A change told while the hold is read would find no one listening: read again instead (read-hold.ts).
    const mark = ctx.holdEvents.mark;
    const hold = await heldCall(ctx, caller, taskId);
    if (!hold) return null;
    const task = taskOf(ctx, hold);
    if (task.status !== 'working' || signal.aborted) return task;
    if (ctx.holdEvents.changedSince(hold.id, mark)) continue;
    const untilDeadline =
      hold.status === 'pending' && hold.expiresAt !== null ? hold.expiresAt - ctx.now() : 60_000;
    if ((await ctx.holdEvents.wait(hold.id, Math.min(untilDeadline, 60_000), signal)) === 'closed')
      return taskOf(ctx, (await heldCall(ctx, caller, taskId)) ?? hold);
  }
}

export type CancelOutcome = 'cancelled' | 'not_found' | 'finished' | 'running';

/**
 * The client no longer wants the call: a pending hold is withdrawn (approvers see it closed; a later
 * decision changes nothing). One that ended (decided against, expired, carried out, withdrawn) is
 * `finished`; an approved or allowed call being carried out is `running`, which nothing stops now.
 */
export async function cancelHeldTask(
  ctx: ServiceContext,
  caller: ProxyCaller,
  taskId: string,
): Promise<CancelOutcome> {
  const hold = await heldCall(ctx, caller, taskId);
  if (!hold) return 'not_found';
  const unstoppable = (current: Hold) => (taskOf(ctx, current).status === 'working' ? 'running' : 'finished');
  if (hold.status !== 'pending') return unstoppable(hold);
  const outcome = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, hold.workspaceId);
    const current = (await findHold(tx, hold.workspaceId, hold.id, true))!;
    const now = ctx.now();
    // Decided since it was read: as it is now. Past its deadline: expired (below), so finished.
    if (current.status !== 'pending') return unstoppable(current);
    if (current.expiresAt !== null && current.expiresAt <= now) return 'finished' as const;
    const next = withdrawHold(current, now);
    await updateHoldState(tx, next);
    await emitHoldEvent(tx, ctx, next);
    await notifyChange(tx, ctx, next);
    await chain.append('hold.withdrawn', {
      hold: hold.id,
      channel: next.channel,
      reason: next.reason,
      agent: { id: caller.agent.id },
    });
    return 'cancelled' as const;
  });
  if (outcome === 'finished') await expireIfOverdue(ctx, hold.workspaceId, hold.id);
  ctx.holdEvents.publish(hold.id, hold.workspaceId);
  return outcome;
}
