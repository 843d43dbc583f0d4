/**
 * Approval in the requesting member's own MCP client (docs/mcp.md, "Approval in the client"): where
 * the rule says `self_approval`, the member a held call was requested for (a key bound to them, an
 * OAuth client they allowed) decides it at their assistant, through the one decision path, on the
 * channel `mcp_client`. The asking is the transport's (src/mcp/client-approval.ts).
 */
import type { Hold, Verdict } from '../domain/hold.ts';
import type { ServiceContext } from './context.ts';
import { decideHold, selfApprovalAllowed } from './decide-hold.ts';
import { settledHeldTask } from './held-call-tasks.ts';
import { answerFor, type ProxyAnswer, type ProxyCaller } from './proxy-call.ts';
import { getHold } from './read-hold.ts';

/** Whether the client that made this held call may be asked to decide it. */
export const mayAskInClient = (ctx: ServiceContext, hold: Hold) =>
  hold.status === 'pending' ? selfApprovalAllowed(ctx.db, hold) : Promise.resolve(false);

/**
 * The member's verdict, recorded as theirs; then the call's answer: an approved call once it ran
 * (the execution worker runs it, as after any approval), or as it stands when `signal` aborts first
 * (the client went away, or the wait is over). A hold decided or closed meanwhile is answered as it is.
 */
export async function decideInClient(
  ctx: ServiceContext,
  caller: ProxyCaller,
  hold: Hold,
  verdict: Verdict,
  { signal, outputSchema }: { signal: AbortSignal; outputSchema: boolean },
): Promise<ProxyAnswer> {
  const { workspaceId, id: holdId } = hold;
  const decided = await decideHold(ctx, {
    workspaceId,
    holdId,
    memberId: hold.requestedFor!,
    verdict,
    channel: 'mcp_client',
  });
  if (decided.hold.status === 'approved') await settledHeldTask(ctx, caller, holdId, signal);
  const now = await getHold(ctx, workspaceId, holdId);
  return { result: answerFor(ctx, now, { outputSchema }), hold: now };
}
