/**
 * After an approval the proxy makes the upstream call itself, right away (decisions.md, MCP proxy):
 * approved → executed when the upstream answers (even with isError), → failed when it cannot be
 * reached or answers a JSON-RPC error, or when the call was sent and its answer never came (the
 * server's call timeout, a connection lost mid-request): then its outcome is `unknown`, it is never
 * run again, and its approvers are told. A call is claimed before it runs, so it never runs twice.
 */
import { findHold, listHoldsToExecute, listStaleExecutions, updateHoldState } from '../store/holds.ts';
import { findMcpServer } from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';
import { describeFailure, type Upstreams } from './proxy-call.ts';
import { recordExecution, renewingOnProgress } from './record-execution.ts';

/**
 * A running call this much older than its server's call timeout belonged to an instance that died
 * mid-call: the outcome is unknown. While a call runs past its timeout on progress, its start is renewed.
 */
export const STALE_CLAIM_MS = 3 * 60_000;

/** Takes the hold for this instance; false when it is not approved or someone else took it. */
async function claim(ctx: ServiceContext, workspaceId: string, holdId: string) {
  return ctx.db.transaction(async (tx) => {
    const hold = await findHold(tx, workspaceId, holdId, true);
    if (!hold || hold.status !== 'approved' || hold.mcpServerId === null || hold.execution !== null)
      return null;
    const claimed = {
      ...hold,
      execution: { status: 'running' as const, startedAt: ctx.now(), completedAt: null, outcome: null },
    };
    await updateHoldState(tx, claimed);
    return claimed;
  });
}

/** Approved proxy calls not run yet, oldest first (at most `limit`): what the execution worker runs. */
export const approvedCallsToRun = (ctx: ServiceContext, limit: number) => listHoldsToExecute(ctx.db, limit);

export async function executeApproved(
  ctx: ServiceContext,
  upstreams: Upstreams,
  hold: { id: string; workspaceId: string },
): Promise<void> {
  const claimed = await claim(ctx, hold.workspaceId, hold.id);
  if (!claimed) return;
  const server = await findMcpServer(ctx.db, claimed.mcpServerId!);
  const startedAt = claimed.execution.startedAt;
  const renewing = renewingOnProgress(ctx, claimed);
  try {
    if (!server) throw new Error('the MCP server was removed');
    const result = await upstreams.callTool(server, claimed.toolName, claimed.arguments, {
      onProgress: renewing.onProgress,
    });
    await renewing.settled();
    await recordExecution(ctx, claimed, { status: 'executed', startedAt, outcome: result });
  } catch (error) {
    await renewing.settled();
    await recordExecution(ctx, claimed, { status: 'failed', startedAt, outcome: describeFailure(error) });
  }
}

/**
 * Calls that were running on an instance that died (approved calls it claimed, allowed calls whose
 * result it had not recorded): never re-run (they may have run), marked failed with outcome unknown
 * (an approved call's approvers are told). A call counts as dead once its stored start is older than
 * its server's call timeout plus STALE_CLAIM_MS. Returns how many were marked.
 */
export async function failStaleExecutions(ctx: ServiceContext): Promise<number> {
  const now = ctx.now();
  let marked = 0;
  for (const { id, workspaceId } of await listStaleExecutions(ctx.db, now - STALE_CLAIM_MS)) {
    // Its result is here, waiting for the database: it will be recorded, not guessed.
    if (ctx.executions.holds(id)) continue;
    const hold = await findHold(ctx.db, workspaceId, id);
    if (!hold?.execution || hold.mcpServerId === null) continue;
    const server = await findMcpServer(ctx.db, hold.mcpServerId);
    const timeoutMs = (server?.callTimeoutSeconds ?? 0) * 1000;
    if (hold.execution.startedAt >= now - STALE_CLAIM_MS - timeoutMs) continue;
    const outcome = {
      code: -32001,
      message:
        'Interrupted: the instance running the call stopped; the call may or may not have run upstream',
      outcome: 'unknown',
    };
    const done = await recordExecution(ctx, hold, {
      status: 'failed',
      startedAt: hold.execution.startedAt,
      outcome,
    });
    // Unless the call's own outcome was recorded meanwhile.
    if (done.execution?.outcome === outcome) marked += 1;
  }
  return marked;
}
