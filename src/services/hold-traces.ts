/**
 * A held MCP call's trace (docs/settings.md, "Telemetry"): kept when it is submitted, so that the
 * upstream call the execution worker runs after the approval, maybe on another instance, continues the
 * agent's trace. Tracing off: nothing is kept or read.
 */
import type { Hold } from '../domain/hold.ts';
import { saveHoldTrace, takeHoldTrace } from '../store/hold-traces.ts';
import { currentTraceparent, describeSpan, resumingTrace, tracing } from '../telemetry/tracing.ts';
import type { ServiceContext } from './context.ts';

/** Names the hold in the active span and keeps the trace of a call held for a person. */
export async function keepHoldTrace(ctx: ServiceContext, hold: Hold): Promise<void> {
  if (!tracing.on) return;
  describeSpan({ 'hold.id': hold.id, 'hold.status': hold.status });
  const traceparent = currentTraceparent();
  if (hold.status === 'pending' && hold.mcpServerId !== null && traceparent)
    await saveHoldTrace(ctx.db, hold, traceparent);
}

/** Runs `work` (the approved call) in the trace the hold was submitted in, if one was kept. */
export async function inHoldTrace<T>(
  ctx: ServiceContext,
  hold: { workspaceId: string; id: string },
  work: () => Promise<T>,
): Promise<T> {
  if (!tracing.on) return work();
  return resumingTrace(await takeHoldTrace(ctx.db, hold.workspaceId, hold.id), work);
}
