/**
 * After an approval the proxy makes the upstream call itself, right away (decisions.md, MCP proxy):
 * approved → executed when the upstream answers (even with isError), → failed when it cannot be
 * reached or answers a JSON-RPC error, or when the call was sent and its answer never came (the
 * server's call timeout, a connection lost mid-request): then its outcome is `unknown`, it is never
 * run again, and its approvers are told. A call is claimed before it runs, so it never runs twice.
 */
import type { Hold } from '../domain/hold.ts';
import { alertEventBody } from '../domain/webhooks.ts';
import type { Sql } from '../store/db.ts';
import { lockChainHead } from '../store/evidence.ts';
import { listHoldsToExecute, listStaleExecutions } from '../store/hold-sweeps.ts';
import { findHold, updateHoldState } from '../store/holds.ts';
import { findMcpServer } from '../store/mcp-servers.ts';
import { findWorkspace } from '../store/workspaces.ts';
import { writeTogether } from '../store/statements.ts';
import type { ServiceContext } from './context.ts';
import { chainAfter } from './evidence.ts';
import { argumentsToRun } from './decision-changes.ts';
import { checkApprovedHold, type EvidenceMismatch, runInEvidence } from './hold-evidence.ts';
import { CALL_FAILED, CALL_TIMED_OUT, describeFailure, type Upstreams } from './proxy-call.ts';
import { recordExecution, renewingOnProgress } from './record-execution.ts';
import { approvedCallMeta } from './receipts.ts';
import { evidenceEventStatements } from './evidence-events.ts';
import { inHoldTrace } from './hold-traces.ts';

/**
 * A running call this much older than its server's call timeout belonged to an instance that died
 * mid-call: the outcome is unknown. While a call runs past its timeout on progress, its start is renewed.
 */
export const STALE_CLAIM_MS = 3 * 60_000;

/** What the execution error of a refused call says (never the arguments). */
const REFUSED_MESSAGE: Record<EvidenceMismatch, string> = {
  submission_not_in_evidence: 'its submission is not in the evidence',
  call_not_as_submitted: 'the call is not the one its evidence records',
  approval_not_in_evidence: 'its approval is not in the evidence',
  already_run: 'the evidence records it as run already',
};

/**
 * Takes the hold for this instance; null when it is not approved, someone else took it, its workspace
 * is frozen, or it is refused. Under the chain's lock (the signer checks its head first), the hold is
 * checked against its evidence (hold-evidence.ts): the call that is run is the one its `hold.submitted` records, on the MCP
 * server it was submitted to, and its `hold.approved` is there. Otherwise it is not run: the hold
 * fails with the reason, `hold.execution_refused` says so, and `evidence.alert` tells the operators.
 */
async function claim(ctx: ServiceContext, workspaceId: string, holdId: string) {
  let refused = false;
  const claimed = await ctx.db.transaction(async (tx) => {
    const head = await lockChainHead(tx, workspaceId);
    if (!head) throw new Error('workspace has no evidence chain');
    const chain = await chainAfter(tx, ctx, workspaceId, head);
    // Under the lock a freeze takes too: nothing of a frozen workspace runs (it waits, still approved).
    if ((await findWorkspace(tx, workspaceId))?.frozenAt != null) return null;
    const hold = await findHold(tx, workspaceId, holdId, true);
    if (!hold || hold.status !== 'approved' || hold.mcpServerId === null || hold.execution !== null)
      return null;
    const server = await findMcpServer(tx, hold.mcpServerId);
    const check = await checkApprovedHold(tx, hold, head);
    // The MCP server it goes to is the one it was submitted to (a removed one fails as before).
    const elsewhere = server && (server.workspaceId !== workspaceId || server.name !== hold.connection);
    const why: EvidenceMismatch | null = !check.ok
      ? check.reason
      : elsewhere
        ? 'call_not_as_submitted'
        : (await runInEvidence(tx, hold, check.approvedSeq, head))
          ? 'already_run'
          : null;
    if (why !== null || !check.ok) {
      refused = true;
      const now = ctx.now();
      const reason = why ?? 'call_not_as_submitted';
      await updateHoldState(tx, {
        ...hold,
        status: 'failed',
        execution: {
          status: 'failed',
          startedAt: now,
          completedAt: now,
          outcome: {
            code: CALL_FAILED,
            message: `Refused: the approved call was not run: ${REFUSED_MESSAGE[reason]}`,
            reason,
          },
        },
      });
      const entry = chain.append('hold.execution_refused', { hold: hold.id, reason });
      await writeTogether(tx, ctx.db.dialect, [
        ...chain.writes(),
        ...(await refusedAlert(tx, ctx, workspaceId, { seq: entry.seq, reason, hold: hold.id })),
      ]);
      return null;
    }
    // What runs is what the evidence records (the same as the row, changes too, as just checked).
    const next: Hold & { execution: NonNullable<Hold['execution']> } = {
      ...hold,
      toolName: check.call.toolName,
      arguments: check.call.arguments,
      execution: { status: 'running' as const, startedAt: ctx.now(), completedAt: null, outcome: null },
    };
    await updateHoldState(tx, next);
    return { hold: next, server };
  });
  if (refused) ctx.holdEvents.publish(holdId, workspaceId);
  return claimed;
}

/** The `evidence.alert` of a refused call, for the outbox, when the workspace has a webhook. */
async function refusedAlert(
  tx: Sql,
  ctx: ServiceContext,
  workspaceId: string,
  refused: { seq: number; reason: EvidenceMismatch; hold: string },
) {
  const now = ctx.now();
  const body = alertEventBody(workspaceId, { state: 'execution_refused', ...refused }, now);
  return evidenceEventStatements(tx, workspaceId, body, now);
}

/** Approved proxy calls not run yet, oldest first (at most `limit`): what the execution worker runs. */
export const approvedCallsToRun = (ctx: ServiceContext, limit: number) => listHoldsToExecute(ctx.db, limit);

export async function executeApproved(
  ctx: ServiceContext,
  upstreams: Upstreams,
  hold: { id: string; workspaceId: string },
): Promise<void> {
  const taken = await claim(ctx, hold.workspaceId, hold.id);
  if (!taken) return;
  const { hold: claimed, server } = taken;
  const startedAt = claimed.execution.startedAt;
  const renewing = renewingOnProgress(ctx, claimed);
  try {
    if (!server) throw new Error('the MCP server was removed');
    // In the agent's trace, when one was kept at submission.
    const result = await inHoldTrace(ctx, claimed, async () =>
      upstreams.callTool(server, claimed.toolName, argumentsToRun(claimed), {
        onProgress: renewing.onProgress,
        meta: await approvedCallMeta(ctx, claimed),
      }),
    );
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
      code: CALL_TIMED_OUT,
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
