/**
 * Classifying a tool as `allow` from the app, and what to do with the calls of it that already wait:
 * an admin may approve them in the same step. That is a bulk approval (bulk-decisions.ts): each is one
 * decision of that admin, counted and evidenced like any other, and a hold whose rule keeps it out of
 * bulk approval (four-eyes, passkey-signed) is left for its own page.
 */
import { bulkDecide } from './bulk-decisions.ts';
import type { ServiceContext } from './context.ts';
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
  /** Not this admin's to decide, not to be approved in bulk, decided meanwhile, or by them before. */
  left: number;
}

export async function approveWaitingHolds(
  ctx: ServiceContext,
  input: { workspaceId: string; memberId: string; tool: { connection: string; name: string } },
): Promise<ApprovedWaiting> {
  const counts: ApprovedWaiting = { approved: 0, awaitingOthers: 0, left: 0 };
  const waiting = await pendingHoldIdsOfTool(ctx.db, input.workspaceId, input.tool, MOST);
  const outcomes = await bulkDecide(ctx, {
    workspaceId: input.workspaceId,
    memberId: input.memberId,
    holdIds: waiting.map((hold) => hold.id),
    verdict: 'approve',
    comment: 'Approved while classifying the tool as allow',
  });
  for (const outcome of outcomes) {
    if ('skip' in outcome) counts.left += 1;
    else if (outcome.status === 'approved') counts.approved += 1;
    else counts.awaitingOthers += 1;
  }
  return counts;
}

/** The tools the workspace has seen or classified (the Rules and MCP servers pages). */
export const toolsOf = (ctx: ServiceContext, workspaceId: string) => listTools(ctx.db, workspaceId);
