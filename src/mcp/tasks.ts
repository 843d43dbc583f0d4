/**
 * Held calls as MCP tasks, on the wire of each revision: the 2025-11-25 `tasks` capability
 * (`tools/call` with `params.task`, then `tasks/get`, `tasks/result`, `tasks/cancel`) and the tasks
 * extension of 2026-07-28 (`io.modelcontextprotocol/tasks` in the request's client capabilities, a
 * `resultType: "task"` answer, then `tasks/get`, `tasks/update`, `tasks/cancel`). What a task is
 * lives in src/domain/held-task.ts and src/services/held-call-tasks.ts.
 */
import {
  CLIENT_CAPABILITIES_META_KEY,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type Server,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { HeldTask } from '../domain/held-task.ts';
import type { ServiceContext } from '../services/context.ts';
import { cancelHeldTask, findHeldTask, settledHeldTask } from '../services/held-call-tasks.ts';
import type { ProxyCaller } from '../services/proxy-call.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
/** How often a client should ask: a person decides in minutes; a read by primary key is cheap. */
export const POLL_INTERVAL_MS = 2000;

/** What the proxy declares: the 2025 capability (tool calls, cancel), or the 2026 extension. */
export const taskCapabilities = (legacy: boolean): ServerCapabilities =>
  legacy
    ? { tasks: { cancel: {}, requests: { tools: { call: {} } } } }
    : ({ extensions: { [TASKS_EXTENSION]: {} } } as ServerCapabilities);

/** Whether a 2026-era request declares the tasks extension among its client capabilities. */
function declaresTasks(envelope: object | undefined): boolean {
  const declared = (envelope as Record<string, { extensions?: Record<string, unknown> }> | undefined)?.[
    CLIENT_CAPABILITIES_META_KEY
  ];
  return declared?.extensions?.[TASKS_EXTENSION] !== undefined;
}

/** Whether the client asked for (2025) or accepts (2026) a task in answer to this tools/call. */
export function wantsTask(
  legacy: boolean,
  params: { task?: unknown },
  envelope: object | undefined,
): boolean {
  if (legacy) return typeof params.task === 'object' && params.task !== null;
  return declaresTasks(envelope);
}

/**
 * A task as each revision spells it; the 2026 form carries its outcome inline. A call not carried out
 * (rejected, expired) fails on 2025 with its error result; the 2026 extension keeps `failed` for
 * JSON-RPC errors, so there it completes with that result.
 */
function wireTask(task: HeldTask, legacy: boolean) {
  const { result, error, ...state } = task;
  // Holds are kept: a task lives as long as its hold, so no time-to-live.
  if (legacy) return { ...state, ttl: null, pollInterval: POLL_INTERVAL_MS };
  return {
    ...state,
    ...(result ? { status: 'completed' } : {}),
    ttlMs: null,
    pollIntervalMs: POLL_INTERVAL_MS,
    // The result as this revision spells a tool result: with its own `resultType`.
    ...(result ? { result: { resultType: 'complete', ...result } } : {}),
    ...(error ? { error } : {}),
  };
}

/** The answer to a tools/call that made (or joined) a task. */
export function createTaskResult(task: HeldTask, legacy: boolean) {
  return legacy ? { task: wireTask(task, true) } : { resultType: 'task', ...wireTask(task, false) };
}

const TaskParams = z.object({ taskId: z.string().max(200) }).loose();
const UpdateParams = TaskParams.extend({ inputResponses: z.record(z.string(), z.unknown()).optional() });

const notFound = () => new ProtocolError(-32602, 'Task not found');

/** 2026: the task methods serve only a request that declares the extension (-32021 otherwise). */
function requireExtension(legacy: boolean, envelope: object | undefined) {
  if (legacy || declaresTasks(envelope)) return;
  throw new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });
}

/** tasks/get, tasks/result (2025), tasks/update (2026) and tasks/cancel for the caller's tasks. */
export function serveTasks(server: Server, ctx: ServiceContext, caller: ProxyCaller, legacy: boolean) {
  const schemas = { params: TaskParams };
  server.setRequestHandler('tasks/get', schemas, async ({ taskId }, handler) => {
    requireExtension(legacy, handler.mcpReq.envelope);
    const task = await findHeldTask(ctx, caller, taskId);
    if (!task) throw notFound();
    return wireTask(task, legacy);
  });

  server.setRequestHandler('tasks/cancel', schemas, async ({ taskId }, handler) => {
    requireExtension(legacy, handler.mcpReq.envelope);
    const outcome = await cancelHeldTask(ctx, caller, taskId);
    if (outcome === 'not_found') throw notFound();
    // 2025: a task that ended cannot be cancelled (invalid params); 2026: cancelling is a request
    // the server may find too late, acknowledged either way.
    if (!legacy) return {};
    if (outcome === 'finished') throw new ProtocolError(-32602, 'The task has already ended');
    // Approved or allowed, it went (or goes) upstream: nothing can call it back. Not invalid
    // params: the task has not ended, and ends when the upstream answers.
    if (outcome === 'running')
      throw new ProtocolError(-32000, 'The call is being carried out and can no longer be cancelled');
    return wireTask((await findHeldTask(ctx, caller, taskId))!, true);
  });

  if (legacy) {
    // Answers once the task has ended, with exactly what the call would have answered.
    server.setRequestHandler('tasks/result', schemas, async ({ taskId }, handler) => {
      const task = await settledHeldTask(ctx, caller, taskId, handler.mcpReq.signal);
      if (!task) throw notFound();
      const related = { _meta: { [RELATED_TASK]: { taskId } } };
      // A call not carried out failed with its error result, answered as a result all the same.
      if (task.result) return { ...task.result, ...related };
      if (task.status === 'failed')
        throw new ProtocolError(task.error!.code, task.error!.message, task.error!.data);
      if (task.status === 'cancelled') throw new ProtocolError(-32000, 'The task was cancelled');
      throw new ProtocolError(-32000, 'The service is stopping: ask for the result again');
    });
  } else {
    // A held call never asks its client anything: there are no input requests to answer.
    server.setRequestHandler('tasks/update', { params: UpdateParams }, async ({ taskId }, handler) => {
      requireExtension(legacy, handler.mcpReq.envelope);
      if (!(await findHeldTask(ctx, caller, taskId))) throw notFound();
      return {};
    });
  }
}
