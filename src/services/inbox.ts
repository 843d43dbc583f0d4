/** What the app shows a member: the holds waiting for them, the history, one hold in full. */
import { type Hold, isApprover } from '../domain/hold.ts';
import {
  type HoldFilters,
  listHoldDecisions,
  listHolds,
  listPendingApprovers,
  listPendingHolds,
  pendingDecidedBy,
} from '../store/holds.ts';
import type { Member } from '../store/members.ts';
import { groupsOfMember } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';
import { getHold } from './read-hold.ts';

const INBOX_LIMIT = 500;

/** Pending holds this member may decide and has not decided yet, newest first. */
export async function inboxOf(ctx: ServiceContext, member: Member): Promise<Hold[]> {
  const [pending, waitsForMember] = await Promise.all([
    listPendingHolds(ctx.db, member.workspaceId, INBOX_LIMIT),
    waitingFilter(ctx, member),
  ]);
  return pending.filter(waitsForMember);
}

/**
 * The ids of the holds `inboxOf` lists, read without their arguments: every page shows their count,
 * and loading each hold's arguments for it made every page as slow as the largest holds.
 */
export async function waitingIdsOf(ctx: ServiceContext, member: Member): Promise<string[]> {
  const [pending, waitsForMember] = await Promise.all([
    listPendingApprovers(ctx.db, member.workspaceId, INBOX_LIMIT),
    waitingFilter(ctx, member),
  ]);
  return pending.filter(waitsForMember).map((hold) => hold.id);
}

/** Whether a pending hold waits for this member: not expired, not decided by them, theirs to decide. */
async function waitingFilter(ctx: ServiceContext, member: Member) {
  const [groups, decided] = await Promise.all([
    groupsOfMember(ctx.db, member.workspaceId, member.id),
    pendingDecidedBy(ctx.db, member.workspaceId, member.id),
  ]);
  const now = ctx.now();
  return (hold: { id: string; approvers: string[]; expiresAt: number | null }) =>
    (hold.expiresAt === null || hold.expiresAt > now) &&
    !decided.has(hold.id) &&
    isApprover(hold.approvers, member, groups);
}

export async function historyOf(
  ctx: ServiceContext,
  workspaceId: string,
  filters: HoldFilters,
  before: { createdAt: number; id: string } | null,
  limit = 50,
): Promise<Hold[]> {
  return listHolds(ctx.db, workspaceId, filters, before, limit);
}

export async function holdDetail(ctx: ServiceContext, workspaceId: string, holdId: string) {
  const hold = await getHold(ctx, workspaceId, holdId);
  return { hold, decisions: await listHoldDecisions(ctx.db, hold.id) };
}
