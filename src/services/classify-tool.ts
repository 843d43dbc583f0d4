/**
 * Classifying a tool as `allow` from the app, and what to do with the calls of it that already wait:
 * an admin may approve them in the same step. Each is one decision of that admin, counted and
 * evidenced like any other (four-eyes holds still wait for their other approvers).
 */
import type { ServiceContext } from './context.ts';
import { decideHold } from './decide-hold.ts';
import { findTool, listTools } from '../store/tools.ts';
import { pendingHoldIdsOfTool } from '../store/hold-sweeps.ts';

/** Enough for any real backlog; a larger one is decided in the inbox. */
const MOST = 500;

export interface WaitingHolds {
  /** Whether the tool has never been classified (its calls wait for an admin). */
  isNew: boolean;
  /** Its pending holds, at most MOST. */
  waiting: number;
}

export async function waitingHoldsOfTool(
  ctx: ServiceContext,
  workspaceId: string,
  tool: { connection: string; name: string },
): Promise<WaitingHolds> {
  const found = await findTool(ctx.db, workspaceId, tool.connection, tool.name);
  const waiting = await pendingHoldIdsOfTool(ctx.db, workspaceId, tool, MOST);
  return { isNew: !found || found.classification === 'new', waiting: waiting.length };
}

export interface ApprovedWaiting {
  approved: number;
  /** Approved by this admin, still waiting for more approvers (four-eyes). */
  awaitingOthers: number;
  /** Not this admin's to decide, decided meanwhile, or decided by them before. */
  left: number;
}

export async function approveWaitingHolds(
  ctx: ServiceContext,
  input: { workspaceId: string; memberId: string; tool: { connection: string; name: string } },
): Promise<ApprovedWaiting> {
  const counts: ApprovedWaiting = { approved: 0, awaitingOthers: 0, left: 0 };
  for (const { id } of await pendingHoldIdsOfTool(ctx.db, input.workspaceId, input.tool, MOST)) {
    const result = await decideHold(ctx, {
      workspaceId: input.workspaceId,
      holdId: id,
      memberId: input.memberId,
      verdict: 'approve',
      comment: 'Approved while classifying the tool as allow',
      channel: 'inbox',
    });
    if (result.outcome !== 'recorded') counts.left += 1;
    else if (result.hold.status === 'approved') counts.approved += 1;
    else counts.awaitingOthers += 1;
  }
  return counts;
}

/** The tools the workspace has seen or classified (the Rules and MCP servers pages). */
export const toolsOf = (ctx: ServiceContext, workspaceId: string) => listTools(ctx.db, workspaceId);
