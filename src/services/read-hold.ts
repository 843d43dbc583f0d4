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
 * A wait for a hold's decision (`waitForHold`). While it waits it is this object, a closure and a
 * timer (hold-events.ts): no suspended async function, whose frame, registers and promises were a
 * tenth of an open wait's memory.
 */
class HoldWait {
  readonly hold: Promise<Hold>;
  private resolve!: (hold: Hold) => void;
  private reject!: (error: unknown) => void;
  private readonly ctx: ServiceContext;
  private readonly workspaceId: string;
  private readonly holdId: string;
  private readonly until: number;
  private stopped = false;
  private endWait: (() => void) | undefined;

  constructor(ctx: ServiceContext, workspaceId: string, holdId: string, timeoutMs: number) {
    this.ctx = ctx;
    this.workspaceId = workspaceId;
    this.holdId = holdId;
    this.until = ctx.now() + timeoutMs;
    this.hold = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.look();
  }

  /** Ends the wait now (the caller has gone): the answer is the record as it is. Idempotent. */
  readonly stop = () => {
    this.stopped = true;
    this.endWait?.();
  };

  private look(): void {
    const { ctx, workspaceId, holdId } = this;
    // A change told while the record is read would find no one listening: looked at again instead.
    const mark = ctx.holdEvents.mark;
    answerOrWait(ctx, workspaceId, holdId, this.until).then((next) => {
      if (typeof next !== 'number') return this.resolve(next);
      if (this.stopped) return this.current();
      if (ctx.holdEvents.changedSince(holdId, mark)) return this.look();
      this.endWait = ctx.holdEvents.onChange(holdId, next, (outcome) =>
        // Woken at shutdown, or the caller has gone: the record as it is now.
        outcome === 'closed' ? this.current() : this.look(),
      );
    }, this.reject);
  }

  private current(): void {
    getHoldForAgent(this.ctx, this.workspaceId, this.holdId).then(this.resolve, this.reject);
  }
}

/**
 * Answers as soon as the hold is no longer pending, at its deadline, at `timeoutMs`, at shutdown, or
 * when stopped (`stop`), always with the current hold (`hold`).
 */
export const waitForHold = (
  ctx: ServiceContext,
  workspaceId: string,
  holdId: string,
  timeoutMs: number,
): Pick<HoldWait, 'hold' | 'stop'> => new HoldWait(ctx, workspaceId, holdId, timeoutMs);

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
