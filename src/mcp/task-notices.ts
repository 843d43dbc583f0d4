/**
 * Task status pushed to clients that would otherwise poll (issue 40). A 2025-11-25 session hears
 * `notifications/tasks/status` (the task as `tasks/get` gives it) on its GET stream for the calls it
 * made as tasks (decision-notices.ts sends it). A 2026-07-28 client listens: `subscriptions/listen`
 * with `notifications.taskIds` is acknowledged with the ids of its own tasks, then told each change
 * of them as `notifications/tasks` (the detailed task), stamped with its subscription id. Hold
 * events reach every instance, so the listen hears a decision made anywhere.
 */
import type { FastifyReply } from 'fastify';
import { MissingRequiredClientCapabilityError, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { HeldTask } from '../domain/held-task.ts';
import { findHeldTask } from '../services/held-call-tasks.ts';
import type { ServiceContext } from '../services/context.ts';
import type { ProxyRequest } from './proxy-server.ts';
import { createTaskResult, TASKS_EXTENSION, wantsTask } from './tasks.ts';

/** As many tasks as one listen follows: the first ones asked for; the acknowledgement names them. */
const MAX_TASK_IDS = 100;
const KEEP_ALIVE_MS = 15_000;

/** A 2026-era `subscriptions/listen` that names tasks (the SDK's listen router would drop them). */
export interface TaskListen {
  id: string | number;
  method: 'subscriptions/listen';
  params: { _meta?: object; notifications: { taskIds: unknown[] } };
}

export function isTaskListen(body: unknown): body is TaskListen {
  const message = body as Partial<TaskListen> | undefined;
  return message?.method === 'subscriptions/listen' && Array.isArray(message.params?.notifications?.taskIds);
}

/** `notifications/tasks/status` (2025-11-25): the task as that revision's `tasks/get` gives it. */
export function taskStatusNotice(task: HeldTask) {
  return {
    method: 'notifications/tasks/status',
    params: (createTaskResult(task, true) as { task: Record<string, unknown> }).task,
  };
}

/** The detailed task (2026-07-28), as `tasks/get` gives it: the task answer without its result type. */
function detailedTask(task: HeldTask): Record<string, unknown> {
  const answer: Record<string, unknown> = createTaskResult(task, false);
  delete answer.resultType;
  return answer;
}

const sse = (message: object) =>
  `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`;

/**
 * Serves a listen for tasks on the reply until the client goes away or the instance stops
 * (`signal`). A client that did not declare the tasks extension is refused (-32021); ids that are
 * not tasks of the caller's server and workspace are left out of the acknowledgement, and a listen
 * that keeps none ends at once, as the SDK's router ends one that keeps nothing.
 */
export async function listenToTasks(
  ctx: ServiceContext,
  { caller, log }: ProxyRequest,
  listen: TaskListen,
  reply: FastifyReply,
  signal: AbortSignal,
): Promise<FastifyReply> {
  if (!wantsTask(false, {}, listen.params._meta)) {
    const { code, message, data } = new MissingRequiredClientCapabilityError({
      requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
    });
    return reply.code(200).send({ jsonrpc: '2.0', id: listen.id, error: { code, message, data } });
  }
  const stamp = { [SUBSCRIPTION_ID_META_KEY]: listen.id };
  const asked = [...new Set(listen.params.notifications.taskIds)].filter((id) => typeof id === 'string');
  /** Per task followed, the task as last told (or as it was when acknowledged). */
  const told = new Map<string, string>();
  for (const taskId of asked.slice(0, MAX_TASK_IDS)) {
    const task = await findHeldTask(ctx, caller, taskId);
    if (task) told.set(taskId, JSON.stringify(detailedTask(task)));
  }

  reply.hijack();
  const response = reply.raw;
  response.writeHead(200, {
    'Content-Type': 'text/event-stream',
    'Cache-Control': 'no-cache, no-transform',
    'X-Accel-Buffering': 'no',
  });
  const write = (text: string) => {
    if (!response.writableEnded) response.write(text);
  };
  write(
    sse({
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { taskIds: [...told.keys()] }, _meta: stamp },
    }),
  );

  /** Tells the tasks that changed since last told, one look at a time so they are told in order. */
  let telling = Promise.resolve();
  const tell = (taskIds: string[]) => {
    telling = telling.then(async () => {
      for (const taskId of taskIds) {
        const task = await findHeldTask(ctx, caller, taskId);
        const detailed = task && detailedTask(task);
        if (!detailed || told.get(taskId) === JSON.stringify(detailed)) continue;
        told.set(taskId, JSON.stringify(detailed));
        write(sse({ method: 'notifications/tasks', params: { ...detailed, _meta: stamp } }));
      }
    });
    telling = telling.catch((error: unknown) =>
      log.warn({ err: error }, 'a task could not be told to its listener'),
    );
  };
  const unwatch = ctx.holdEvents.watchAll((holdId) => {
    if (holdId === undefined || told.has(holdId)) tell(holdId === undefined ? [...told.keys()] : [holdId]);
  });
  // What changed between the acknowledgement and the watch.
  tell([...told.keys()]);
  const keepAlive = setInterval(() => write(': keepalive\n\n'), KEEP_ALIVE_MS);

  const end = () => {
    clearInterval(keepAlive);
    unwatch();
    // The listen's own result ends it gracefully, as the revision says a server ends a subscription.
    write(sse({ id: listen.id, result: { resultType: 'complete', _meta: stamp } }));
    response.end();
  };
  if (told.size === 0 || signal.aborted) end();
  else signal.addEventListener('abort', end, { once: true });
  return reply;
}
