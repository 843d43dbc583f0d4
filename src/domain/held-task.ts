/**
 * A held MCP call seen as an MCP task (2025-11-25 tasks, and the tasks extension of 2026-07-28): the
 * task is the hold (its id is the hold's reference), so any instance answers for it and it lasts as
 * long as the hold. Pure: the wire shapes of each revision are made in src/mcp/tasks.ts.
 */
import { envelopeOf, outcomeUnknown } from './envelope.ts';
import { fourEyesLine } from './four-eyes.ts';
import { type Hold, isWithdrawn, WITHDRAWN_REASON } from './hold.ts';
import { utcText } from './time-text.ts';

export type TaskStatus = 'working' | 'completed' | 'failed' | 'cancelled';

export interface HeldTask {
  taskId: string;
  status: TaskStatus;
  statusMessage: string;
  createdAt: string;
  lastUpdatedAt: string;
  /**
   * The tool result the call now has: `completed` with the upstream's result, or `failed` with the
   * error result of a call not carried out (rejected, expired).
   */
  result?: { content: unknown[]; isError?: boolean; [key: string]: unknown };
  /** `failed` without a result: the JSON-RPC error the call would have been answered with. */
  error?: { code: number; message: string; data?: unknown };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The task of a held (or allowed) call. `answer` is the tool result a task-less client gets for the
 * hold now (the envelope, and the upstream's result once carried out): a rejection or an expiry fails
 * the task with it (an error result, as for every client; the 2026 wire says `completed`, tasks.ts);
 * a call the proxy ran completes it with the upstream's own result; a call it could not run fails it
 * with the error it got. An approved or allowed call works until its outcome is recorded.
 */
export function heldTask(hold: Hold, answer: NonNullable<HeldTask['result']>, statusUrl: string): HeldTask {
  const execution = hold.execution;
  const updatedAt = Math.max(hold.createdAt, hold.decidedAt ?? 0, execution?.completedAt ?? 0);
  const task = { taskId: hold.id, createdAt: iso(hold.createdAt), lastUpdatedAt: iso(updatedAt) };
  if (isWithdrawn(hold)) return { ...task, status: 'cancelled', statusMessage: WITHDRAWN_REASON };
  if (hold.status === 'pending') {
    const until = hold.expiresAt === null ? '' : ` until ${utcText(hold.expiresAt)}`;
    return {
      ...task,
      status: 'working',
      statusMessage: `Held for human approval: ${fourEyesLine(hold)}${until}`,
    };
  }
  const message = envelopeOf(hold, statusUrl).message;
  if (execution?.status === 'executed')
    return {
      ...task,
      status: 'completed',
      statusMessage: message,
      result: execution.outcome as HeldTask['result'],
    };
  if (execution?.status === 'failed') {
    const { code, message: text } = execution.outcome as { code: number; message: string };
    const data = outcomeUnknown(hold) ? { outcome: 'unknown' } : undefined;
    return {
      ...task,
      status: 'failed',
      statusMessage: message,
      error: { code, message: text, ...(data ? { data } : {}) },
    };
  }
  if (hold.status === 'approved' || hold.status === 'auto_allowed')
    return { ...task, status: 'working', statusMessage: message };
  return { ...task, status: 'failed', statusMessage: message, result: answer };
}
