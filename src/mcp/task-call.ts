/**
 * What a tools/call answers when the client may take a task (tasks.ts): a task for a call that waits
 * for people, and on 2025-11-25, where the client asked for one (`params.task`), for every call. There
 * a task begins `working`: an allowed call is answered with its task as soon as it is sent upstream,
 * and runs on; its result is recorded on its hold, which tasks/get and tasks/result read. The SDK
 * checks every tools/call answer as a tool result, which has content: an empty list passes that check,
 * and clients read the task (`task`, or `resultType: "task"`).
 */
import { ProtocolError } from '@modelcontextprotocol/server';
import type { Hold } from '../domain/hold.ts';
import type { ServiceContext } from '../services/context.ts';
import { taskOf } from '../services/held-call-tasks.ts';
import { CHECK_STATUS_TOOL, type ProxyAnswer } from '../services/proxy-call.ts';
import type { CallStream } from './proxy-server.ts';
import { createTaskResult, wantsTask } from './tasks.ts';

/** Runs the call on `stream`; `onRunning` is told the hold of an allowed call as it goes upstream. */
export type RunCall = (stream: CallStream, onRunning?: (hold: Hold) => void) => Promise<ProxyAnswer>;

export async function toolCallAnswer(
  ctx: ServiceContext,
  request: { legacy: boolean; params: { name: string; task?: unknown }; envelope: object | undefined },
  call: CallStream,
  run: RunCall,
): Promise<unknown> {
  const { legacy, params } = request;
  const asTask = wantsTask(legacy, params, request.envelope);
  // The status check is not listed for tasks (2025: "method not found" when asked as one).
  if (asTask && legacy && params.name === CHECK_STATUS_TOOL)
    throw new ProtocolError(-32601, `${CHECK_STATUS_TOOL} does not run as a task`);
  const outcome = asTask && legacy ? await untilTask(call, run) : { answer: await run(call) };
  if ('running' in outcome) return { content: [], ...createTaskResult(taskOf(ctx, outcome.running), true) };
  const { hold, result } = outcome.answer;
  if (asTask && hold && (legacy || hold.status === 'pending'))
    return { content: [], ...createTaskResult(taskOf(ctx, hold), legacy) };
  return result;
}

/**
 * Runs the call until it has an answer or, allowed, is sent upstream. The call outlives its request
 * from then on: the client going away no longer cancels it, and its progress and the upstream's
 * questions have no answer stream left to go on (the client follows the task instead).
 */
async function untilTask(call: CallStream, run: RunCall) {
  let answered = false;
  let started: (hold: Hold) => void = () => {};
  const running = new Promise<Hold>((resolve) => (started = resolve));
  const cancel = new AbortController();
  const cancelUnanswered = () => !answered && cancel.abort(call.signal.reason);
  call.signal.addEventListener('abort', cancelUnanswered, { once: true });
  const done = run(
    {
      id: call.id,
      signal: cancel.signal,
      notify: (notification) => (answered ? Promise.resolve() : call.notify(notification)),
      request: (message) =>
        answered ? Promise.reject(new Error('the call was answered with its task')) : call.request(message),
    },
    started,
  );
  try {
    return await Promise.race([
      done.then((answer) => ({ answer })),
      running.then((hold) => ({ running: hold })),
    ]);
  } finally {
    answered = true;
    call.signal.removeEventListener('abort', cancelUnanswered);
    // Its outcome is recorded on its hold, where the task reads it.
    done.catch(() => {});
  }
}
