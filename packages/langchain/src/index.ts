/**
 * LangChain v1 agents and LangGraph graphs, with their tool-call reviews answered by the Action
 * Approval Service instead of by a person.
 *
 * LangChain's `humanInTheLoopMiddleware` stops a run with a LangGraph interrupt whose value is an
 * `HITLRequest` (the tool calls to review, and the decisions each may get) and resumes on an
 * `HITLResponse`. A tool or node of yours may `interrupt()` with the same request. `runWithApprovals`
 * answers every such interrupt: one hold per tool call, the service's decision as LangChain's
 * (approve; edit, with the arguments an approver changed; reject, with the reason), and resumes the
 * run until it ends.
 *
 * `Command` is the one thing imported at run time (to resume); the rest are types.
 */
import { Command, INTERRUPT, type Interrupt } from '@langchain/langgraph';
import type { ActionRequest, Decision, DecisionType, HITLRequest, HITLResponse } from 'langchain';

/** What the adapter sends: the Hold API's submission plus how to wait (as `ApprovalsClient.hold` takes it). */
export interface HoldRequest {
  tool_name: string;
  arguments?: Record<string, unknown>;
  agent_identity: { id: string; label?: string };
  context?: Record<string, unknown>;
  idempotency_key: string;
  wait?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** What the adapter reads of a hold (a subset of the SDK's `HoldResult`). */
export interface HoldAnswer {
  id: string;
  /** `auto_allowed`, `pending`, `approved`, `rejected`, `expired`… */
  status: string;
  approved: boolean;
  rejected: boolean;
  decision: { reason: string | null } | null;
  statusUrl: string;
  /** True when the idempotency key had been used before and this is that earlier hold. */
  replayed?: boolean;
  /** An approver changed the arguments (a rule's `editable`): run `arguments`. */
  changed?: boolean;
  /** What to run: the arguments as an approver changed them, else those submitted. */
  arguments?: Record<string, unknown> | null;
}

/**
 * The client the adapter needs. `ApprovalsClient` of `@approvals/sdk` is one; a structural type keeps
 * this package free of a runtime dependency on it.
 */
export interface HoldClient {
  hold(request: HoldRequest): Promise<HoldAnswer>;
}

/** A tool call an interrupt asks about, as the adapter describes it to your callbacks. */
export interface ToolCall {
  /** The tool's name (the action request's `name`). */
  name: string;
  /** The call's arguments, as the model made them. */
  arguments: Record<string, unknown>;
  /** The text the request carries for a reviewer (the middleware's `description`), if any. */
  description: string | undefined;
  /** The decisions the call may get (its review config's `allowedDecisions`). */
  allowedDecisions: DecisionType[];
  /** The LangGraph interrupt that asked, and the call's place in its request. */
  interruptId: string;
  index: number;
}

/** A hold the adapter made (or found again by its idempotency key), and what became of it. */
export interface HeldCall {
  /** The hold reference, `svc_pa_…`. */
  id: string;
  /** The `tool_name` submitted. */
  tool: string;
  /** The hold's status when last read: `pending` after the wait means nobody decided in time. */
  status: string;
  /** The answer given to LangChain: `approve`, `edit` (approved with changes) or `reject`. */
  decision: 'approve' | 'edit' | 'reject';
  /** What the tool runs with: the changed arguments after an edit, else the model's. */
  arguments: Record<string, unknown>;
  /** The rule's reason or the approver's comment, when there is one. */
  reason: string | null;
  /** The public status page of the hold: safe to post to a chat or ticket. */
  statusUrl: string;
  /** True when the hold already existed (a resumed run): no second hold was made. */
  replayed: boolean;
}

/** A LangChain agent (`createAgent`) or a compiled LangGraph graph, with a checkpointer. */
export interface Invocable<TInput, TConfig, TResult> {
  invoke(input: TInput, config?: TConfig): Promise<TResult>;
}

export interface RunWithApprovalsOptions<TConfig> {
  /** Submits the holds: e.g. `new ApprovalsClient({ apiKey, baseUrl })` from `@approvals/sdk`. */
  client: HoldClient;
  /** Who acts, as the service's rules, approvers and evidence see it. */
  agentIdentity: { id: string; label?: string };
  /** The run's config, passed to every `invoke`: its `configurable.thread_id` names the conversation. */
  config?: TConfig;
  /** The service's `tool_name` for a call; default the tool's own name. */
  toolName?: (call: ToolCall) => string;
  /** Extra information for the approver, added to `{ thread_id, description }`. */
  context?: Record<string, unknown> | ((call: ToolCall) => Record<string, unknown>);
  /**
   * The hold's idempotency key; default `langchain:<agentIdentity.id>:<interruptId>:<index>`. LangGraph
   * gives a pending interrupt the same id each time its thread is resumed, so a resumed run finds the
   * same hold.
   */
  idempotencyKey?: (call: ToolCall) => string;
  /** How long to wait for people to decide each hold, in ms; default the client's (15 minutes). */
  timeoutMs?: number;
  /** Stops the run and any wait for a decision; the holds stay as they are. */
  signal?: AbortSignal;
  /** Called once a hold is submitted, before waiting for it: e.g. to post `hold.statusUrl`. */
  onHold?: (hold: HeldCall, call: ToolCall) => void | Promise<void>;
  /** What the model is told when a call is not run; default a sentence with the reason. */
  rejectionMessage?: (hold: HeldCall, call: ToolCall) => string;
}

export interface RunWithApprovalsResult<TResult> {
  /** What the last `invoke` returned: the run's final state, with no approval request left. */
  result: TResult;
  /** Every hold made during the run, in the order of the requests' tool calls. */
  holds: HeldCall[];
}

/**
 * Invokes `agent` on `input` and answers every tool-call review it stops for through the service,
 * resuming until none is left. `input` is what `invoke` takes; `null` continues the thread of
 * `config` where it stopped (after a restart: its pending reviews find their holds again).
 * Interrupts that are not tool-call reviews are left in the result for you. Errors of the service
 * propagate: nothing is approved on an error.
 */
export async function runWithApprovals<TInput, TConfig extends { signal?: AbortSignal }, TResult>(
  agent: Invocable<TInput | Command, TConfig, TResult>,
  input: TInput,
  options: RunWithApprovalsOptions<TConfig>,
): Promise<RunWithApprovalsResult<TResult>> {
  const config = { ...options.config, ...(options.signal ? { signal: options.signal } : {}) } as TConfig;
  const thread = (options.config as { configurable?: { thread_id?: unknown } } | undefined)?.configurable
    ?.thread_id;
  const holds: HeldCall[] = [];
  const answered = new Set<string>();
  let result = await agent.invoke(input, config);
  for (;;) {
    const reviews = interruptsOf(result).filter(isReview);
    if (reviews.length === 0) return { result, holds };
    const calls = reviews.flatMap(({ id, value }) => {
      // An interrupt answered once and asking again would loop forever, asking the service each time.
      if (answered.has(id)) throw new Error(`runWithApprovals: interrupt ${id} asked again once answered`);
      answered.add(id);
      return value.actionRequests.map((action, index) => describeCall(value, action, id, index));
    });
    // All at once: the approvers see every call of the step together, and the waits overlap.
    const decided = await allOrAbort(calls, options.signal, (call, signal) =>
      decide(call, thread, options, signal),
    );
    holds.push(...decided);
    const resume: Record<string, HITLResponse> = {};
    for (const [n, call] of calls.entries()) {
      (resume[call.interruptId] ??= { decisions: [] }).decisions.push(decisionOf(decided[n]!, call, options));
    }
    // By interrupt id: each interrupted task gets its own answer.
    result = await agent.invoke(new Command({ resume }), config);
  }
}

/** One hold for one call: submitted without waiting (so `onHold` sees it pending), then waited for. */
async function decide<TConfig>(
  call: ToolCall,
  thread: unknown,
  options: RunWithApprovalsOptions<TConfig>,
  signal: AbortSignal,
): Promise<HeldCall> {
  const extra = typeof options.context === 'function' ? options.context(call) : options.context;
  const request: HoldRequest = {
    tool_name: options.toolName ? options.toolName(call) : call.name,
    arguments: call.arguments,
    agent_identity: options.agentIdentity,
    context: {
      ...(typeof thread === 'string' ? { thread_id: thread } : {}),
      ...(call.description ? { description: call.description } : {}),
      ...extra,
    },
    idempotency_key: options.idempotencyKey
      ? options.idempotencyKey(call)
      : `langchain:${options.agentIdentity.id}:${call.interruptId}:${call.index}`,
    signal,
  };
  let answer = await options.client.hold({ ...request, wait: false });
  const submitted = heldCall(answer, request.tool_name, call);
  await options.onHold?.(submitted, call);
  // The same key again: the service answers with the same hold, and the client waits for its decision.
  if (answer.status === 'pending') {
    answer = await options.client.hold({ ...request, wait: true, timeoutMs: options.timeoutMs });
  }
  return { ...heldCall(answer, request.tool_name, call), replayed: submitted.replayed };
}

function heldCall(answer: HoldAnswer, tool: string, call: ToolCall): HeldCall {
  // Only an explicit yes lets a call through: pending, expired or anything unknown is a no.
  const approved = answer.approved === true && !answer.rejected;
  const changed = approved && answer.changed === true && answer.arguments != null;
  // A call whose review allows no edit cannot run with the changes, nor without them.
  const editRefused = changed && !call.allowedDecisions.includes('edit');
  return {
    id: answer.id,
    tool,
    status: answer.status,
    decision: !approved || editRefused ? 'reject' : changed ? 'edit' : 'approve',
    arguments: changed && !editRefused ? answer.arguments! : call.arguments,
    reason: editRefused
      ? 'an approver changed its arguments, and its review allows no edit (approve it unchanged)'
      : (answer.decision?.reason ?? null),
    statusUrl: answer.statusUrl,
    replayed: answer.replayed === true,
  };
}

/** LangChain's decision for a held call: a rejection's message is what the model reads. */
function decisionOf<TConfig>(
  held: HeldCall,
  call: ToolCall,
  options: RunWithApprovalsOptions<TConfig>,
): Decision {
  if (held.decision === 'approve') return { type: 'approve' };
  if (held.decision === 'edit')
    return { type: 'edit', editedAction: { name: call.name, args: held.arguments } };
  return { type: 'reject', message: (options.rejectionMessage ?? rejectionMessage)(held, call) };
}

/** The default message the model gets for a call that did not run: why, and where to look. */
export function rejectionMessage(hold: HeldCall): string {
  if (hold.status === 'pending') {
    // Said so that the model does not call again: a new call is a new hold for the approvers.
    return `Not run: the action is still waiting for approval (${hold.statusUrl}); calling it again would ask again.`;
  }
  if (hold.status === 'expired') {
    return `Not run: nobody decided before the approval request expired (${hold.statusUrl}).`;
  }
  const why = hold.reason ? `: ${hold.reason}` : ' (no reason given)';
  return `Not run: the approvals service rejected this action${why}.`;
}

const ALL_DECISIONS: DecisionType[] = ['approve', 'edit', 'reject'];

function describeCall(
  request: HITLRequest,
  action: ActionRequest,
  interruptId: string,
  index: number,
): ToolCall {
  // The middleware sends one review config per action, named after it; a request of yours may send none.
  const review = request.reviewConfigs?.find((config) => config.actionName === action.name);
  return {
    name: action.name,
    arguments: action.args,
    description: action.description,
    allowedDecisions: review?.allowedDecisions ?? ALL_DECISIONS,
    interruptId,
    index,
  };
}

function interruptsOf(result: unknown): Interrupt[] {
  const interrupts = (result as { [INTERRUPT]?: unknown } | null)?.[INTERRUPT];
  return Array.isArray(interrupts) ? (interrupts as Interrupt[]) : [];
}

/** A tool-call review: an interrupt whose value is an `HITLRequest`, with an id to resume it by. */
function isReview(interrupt: Interrupt): interrupt is { id: string; value: HITLRequest } {
  const value = interrupt.value as Partial<HITLRequest> | undefined;
  return typeof interrupt.id === 'string' && Array.isArray(value?.actionRequests);
}

/**
 * `Promise.all` over `work`, where the first failure aborts the others' requests (so no wait is left
 * running for a run that has already failed); `outer` aborts them all.
 */
async function allOrAbort<T, R>(
  items: T[],
  outer: AbortSignal | undefined,
  work: (item: T, signal: AbortSignal) => Promise<R>,
): Promise<R[]> {
  const controller = new AbortController();
  const signal = outer ? AbortSignal.any([outer, controller.signal]) : controller.signal;
  return Promise.all(
    items.map((item) =>
      work(item, signal).catch((error: unknown) => {
        controller.abort(error);
        throw error;
      }),
    ),
  );
}
