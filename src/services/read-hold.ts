/** Reading a hold once, or waiting for its decision (long-poll). */
import type { Hold } from '../domain/hold.ts';
import { findChainHead } from '../store/evidence.ts';
import { findHold, findHoldByReference } from '../store/holds.ts';
import { findWorkspace, type Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { notFound } from './errors.ts';
import { expireIfOverdue } from './expire-holds.ts';
import { checkApprovedHold } from './hold-evidence.ts';

const overdue = (ctx: ServiceContext, hold: Hold) =>
  hold.status === 'pending' && hold.expiresAt !== null && hold.expiresAt <= ctx.now();

/** The hold as it stands; one found past its deadline is expired first, so no reader sees it pending. */
export async function getHold(ctx: ServiceContext, workspaceId: string, holdId: string): Promise<Hold> {
  // An allowed call answered by this instance is read with its result.
  await ctx.executions.settled(holdId);
  const hold = await findHold(ctx.db, workspaceId, holdId);
  if (!hold) throw notFound('hold');
  return overdue(ctx, hold) ? ((await expireIfOverdue(ctx, workspaceId, holdId)) ?? hold) : hold;
}

/**
 * The hold as its agent is told (GET /api/v1/holds/:id, /wait): `approved` only when its evidence has
 * the approval, and the call as submitted (hold-evidence.ts); a row that says approved without it (a
 * database writer's) is answered as still pending, without a decision. Other statuses as stored.
 */
export async function asEvidenced(ctx: ServiceContext, hold: Hold): Promise<Hold> {
  if (hold.status !== 'approved') return hold;
  // Read after the hold: a head that holds the decision's entry, committed with it.
  const head = await findChainHead(ctx.db, hold.workspaceId);
  if (head && (await checkApprovedHold(ctx.db, hold, head)).ok) return hold;
  return { ...hold, status: 'pending', verdict: null, reason: null, channel: null, decidedAt: null };
}

/** `getHold` as its agent is told (`asEvidenced`). */
export const getHoldForAgent = async (ctx: ServiceContext, workspaceId: string, holdId: string) =>
  asEvidenced(ctx, await getHold(ctx, workspaceId, holdId));

/**
 * Answers as soon as the hold is no longer pending, at its deadline, at `timeoutMs`, or at shutdown,
 * always with the current hold.
 */
export async function waitForHold(
  ctx: ServiceContext,
  workspaceId: string,
  holdId: string,
  timeoutMs: number,
  /** Aborted when the caller has gone: the wait ends and frees its slot. */
  signal?: AbortSignal,
): Promise<Hold> {
  const until = ctx.now() + timeoutMs;
  for (;;) {
    const next = await answerOrWait(ctx, workspaceId, holdId, until);
    if (typeof next !== 'number') return next;
    // Woken at shutdown, or the caller has gone: the record as it is now.
    if ((await ctx.holdEvents.wait(holdId, next, signal)) === 'closed')
      return getHoldForAgent(ctx, workspaceId, holdId);
  }
}

/**
 * The hold, once it is decided or the wait is over; else how long to wait for a change. An open wait
 * keeps only that number, not the record: with 10,000 waits open, the records were a third of their
 * memory.
 */
async function answerOrWait(
  ctx: ServiceContext,
  workspaceId: string,
  holdId: string,
  until: number,
): Promise<Hold | number> {
  const hold = await getHoldForAgent(ctx, workspaceId, holdId);
  const remaining = until - ctx.now();
  if (hold.status !== 'pending' || remaining <= 0) return hold;
  return Math.min(remaining, (hold.expiresAt ?? Number.POSITIVE_INFINITY) - ctx.now());
}

/** For the public status page, which knows no workspace: the unguessable reference is the secret. */
export async function getPublicStatus(
  ctx: ServiceContext,
  reference: string,
): Promise<{ hold: Hold; workspace: Workspace } | undefined> {
  const found = await findHoldByReference(ctx.db, reference);
  if (!found) return undefined;
  const [hold, workspace] = await Promise.all([
    getHold(ctx, found.workspaceId, found.id),
    findWorkspace(ctx.db, found.workspaceId),
  ]);
  return workspace && { hold, workspace };
}
