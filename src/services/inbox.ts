/** What the app shows a member: the holds waiting for them, the history, one hold in full. */
import { type Hold, isApprover } from '../domain/hold.ts';
import {
  type HoldFilters,
  listHoldDecisions,
  listHolds,
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
  const [pending, groups, decided] = await Promise.all([
    listPendingHolds(ctx.db, member.workspaceId, INBOX_LIMIT),
    groupsOfMember(ctx.db, member.workspaceId, member.id),
    pendingDecidedBy(ctx.db, member.workspaceId, member.id),
  ]);
  const now = ctx.now();
  return pending.filter(
    (hold) =>
      (hold.expiresAt === null || hold.expiresAt > now) &&
      !decided.has(hold.id) &&
      isApprover(hold.approvers, member, groups),
  );
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
