/**
 * After an approval the proxy makes the upstream call itself, right away (decisions.md, MCP proxy):
 * approved → executed when the upstream answers (even with isError), → failed when it cannot be
 * reached or answers a JSON-RPC error. A call is claimed before it runs, so it never runs twice.
 */
import { findHold, listStaleExecutions, updateHoldState } from '../store/holds.ts';
import { findMcpServer } from '../store/mcp-servers.ts';
import type { ServiceContext } from './context.ts';
import { describeFailure, recordExecution, type Upstreams } from './proxy-call.ts';

/** A claim older than this belonged to an instance that died mid-call: the outcome is unknown. */
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

export async function executeApproved(
  ctx: ServiceContext,
  upstreams: Upstreams,
  hold: { id: string; workspaceId: string },
): Promise<void> {
  const claimed = await claim(ctx, hold.workspaceId, hold.id);
  if (!claimed) return;
  const server = await findMcpServer(ctx.db, claimed.mcpServerId!);
  const startedAt = claimed.execution.startedAt;
  try {
    if (!server) throw new Error('the MCP server was removed');
    const result = await upstreams.callTool(server, claimed.toolName, claimed.arguments);
    await recordExecution(ctx, claimed, { status: 'executed', startedAt, outcome: result });
  } catch (error) {
    await recordExecution(ctx, claimed, { status: 'failed', startedAt, outcome: describeFailure(error) });
  }
}

/** Calls that were running on an instance that died: never re-run (they may have run), marked failed. */
export async function failStaleExecutions(ctx: ServiceContext): Promise<number> {
  const stale = await listStaleExecutions(ctx.db, ctx.now() - STALE_CLAIM_MS);
  for (const { id, workspaceId } of stale) {
    const hold = await findHold(ctx.db, workspaceId, id);
    if (hold?.execution) {
      await recordExecution(ctx, hold, {
        status: 'failed',
        startedAt: hold.execution.startedAt,
        outcome: { code: -32001, message: 'Interrupted: the outcome of the upstream call is unknown' },
      });
    }
  }
  return stale.length;
}
