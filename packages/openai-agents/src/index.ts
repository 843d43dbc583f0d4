/**
 * The OpenAI Agents SDK, with its tool approvals answered by the Action Approval Service instead of
 * by a person at a prompt.
 *
 * A tool opts in the SDK's own way (`needsApproval: true`, or a function). The SDK then stops the run
 * with an interruption per such call; `runWithApprovals` submits one hold per call, waits for its
 * decision, approves or rejects the call in the run's state and resumes, until the run ends.
 *
 * Only types are imported from `@openai/agents`: the caller passes its own `run` or `Runner`, so this
 * package runs against whichever copy of the SDK the application has, and has no dependencies.
 */
import type {
  Agent,
  AgentInputItem,
  NonStreamRunOptions,
  run,
  Runner,
  RunResult,
  RunState,
  RunToolApprovalItem,
} from '@openai/agents';

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
  /** An approver changed the arguments (a rule's `editable`): the Agents SDK runs the model's, so no. */
  changed?: boolean;
}

/**
 * The client the adapter needs. `ApprovalsClient` of `@approvals/sdk` is one; a structural type keeps
 * this package free of a runtime dependency on it.
 */
export interface HoldClient {
  hold(request: HoldRequest): Promise<HoldAnswer>;
}

/** A tool call the SDK stopped for approval, as the adapter describes it to your callbacks. */
export interface ToolCall {
  /** The tool's name in the agent (the function tool's `name`). */
  name: string;
  /** The model's id for this call; undefined only for items that carry none. */
  callId: string | undefined;
  /** The call's parsed JSON arguments; a value that is not an object comes as `{ input: value }`. */
  arguments: Record<string, unknown>;
  /** The name of the agent that made the call. */
  agentName: string;
  /** The SDK's own item, for anything else. */
  item: RunToolApprovalItem;
}

/** A hold the adapter made (or found again by its idempotency key), and what became of it. */
export interface HeldCall {
  /** The hold reference, `svc_pa_…`. */
  id: string;
  /** The `tool_name` submitted. */
  tool: string;
  callId: string | undefined;
  /** The hold's status when last read: `pending` after the wait means nobody decided in time. */
  status: string;
  /** True when the tool call was let through. */
  approved: boolean;
  /** The rule's reason or the approver's comment, when there is one. */
  reason: string | null;
  /** The public status page of the hold: safe to post to a chat or ticket. */
  statusUrl: string;
  /** True when the hold already existed (a retried run): no second hold was made. */
  replayed: boolean;
}

/** `run` from `@openai/agents`, or a `Runner` (for its configuration: tracing, model provider…). */
export type AgentRunner = Pick<Runner, 'run'> | typeof run;

export interface RunWithApprovalsOptions<TContext, TAgent extends AnyAgent> {
  /** Submits the holds: e.g. `new ApprovalsClient({ apiKey, baseUrl })` from `@approvals/sdk`. */
  client: HoldClient;
  /** Who acts, as the service's rules, approvers and evidence see it. */
  agentIdentity: { id: string; label?: string };
  /** The service's `tool_name` for a call; default the tool's own name. */
  toolName?: (call: ToolCall) => string;
  /** Extra information for the approver, added to `{ agent, call_id }`. */
  context?: Record<string, unknown> | ((call: ToolCall) => Record<string, unknown>);
  /**
   * The hold's idempotency key; default `openai-agents:<agentIdentity.id>:<callId>`, so a retried run
   * finds the same hold. Override when your model provider's call ids are not unique across runs.
   */
  idempotencyKey?: (call: ToolCall) => string;
  /** How long to wait for people to decide each hold, in ms; default the client's (15 minutes). */
  timeoutMs?: number;
  /** Stops the run and any wait for a decision; the holds stay as they are. */
  signal?: AbortSignal;
  /** The SDK's turn limit, for every resumption of the run. */
  maxTurns?: number;
  /**
   * Called each time the run stops for approvals, before any hold is submitted: save
   * `state.toString()` to resume after a crash with `RunState.fromString(agent, saved)` as `input`;
   * the calls keep their ids, so they find their holds again.
   */
  onInterrupted?: (state: RunState<TContext, TAgent>) => void | Promise<void>;
  /** Called once a hold is submitted, before waiting for it: e.g. to post `hold.statusUrl`. */
  onHold?: (hold: HeldCall, call: ToolCall) => void | Promise<void>;
  /** What the model is told when a call is not approved; default a sentence with the reason. */
  rejectionMessage?: (hold: HeldCall, call: ToolCall) => string;
  /** Anything else for `run` (its `context`, `session`…); `stream` is not supported. */
  runOptions?: Omit<NonStreamRunOptions<TContext, TAgent>, 'stream' | 'signal' | 'maxTurns'>;
}

export interface RunWithApprovalsResult<TContext, TAgent extends AnyAgent> {
  /** The SDK's result of the finished run: no interruptions left. */
  result: RunResult<TContext, TAgent>;
  /** Every hold made during the run, in the order their calls were answered. */
  holds: HeldCall[];
}

// The SDK's own generic bound; a narrower one would refuse agents with typed contexts or outputs.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyAgent = Agent<any, any>;

/**
 * Runs `agent` on `input` (a prompt, items, or a saved `RunState`) and answers every tool approval
 * through the service: approved and allowed calls run; rejected, denied, expired and undecided ones
 * are rejected, and the model is told why. Errors of the service propagate: nothing is approved on
 * an error.
 */
export async function runWithApprovals<TAgent extends AnyAgent, TContext = undefined>(
  runner: AgentRunner,
  agent: TAgent,
  input: string | AgentInputItem[] | RunState<TContext, TAgent>,
  options: RunWithApprovalsOptions<TContext, TAgent>,
): Promise<RunWithApprovalsResult<TContext, TAgent>> {
  const runOptions: NonStreamRunOptions<TContext, TAgent> = {
    ...options.runOptions,
    stream: false,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
  };
  const runOnce = (from: string | AgentInputItem[] | RunState<TContext, TAgent>) =>
    typeof runner === 'function'
      ? runner<TAgent, TContext>(agent, from, runOptions)
      : runner.run<TAgent, TContext>(agent, from, runOptions);

  const holds: HeldCall[] = [];
  const answered = new Set<string>();
  let result = await runOnce(input);
  while (result.interruptions.length > 0) {
    await options.onInterrupted?.(result.state);
    const keyOf = options.idempotencyKey ?? defaultKey(options.agentIdentity);
    const asks = result.interruptions.map((item) => {
      const call = describeCall(item);
      return { call, key: keyOf(call) };
    });
    for (const { key } of asks) {
      // A call answered once and stopped again would loop forever, asking the service each time.
      if (answered.has(key)) throw new Error(`runWithApprovals: the call of hold key ${key} stopped again`);
      answered.add(key);
    }
    // All at once: the approvers see every call of the turn together, and the waits overlap.
    const decided = await allOrAbort(asks, options.signal, ({ call, key }, signal) =>
      decide(call, key, options, signal),
    );
    for (const [index, held] of decided.entries()) {
      const { call } = asks[index]!;
      holds.push(held);
      if (held.approved) result.state.approve(call.item);
      else
        result.state.reject(call.item, {
          message: (options.rejectionMessage ?? rejectionMessage)(held, call),
        });
    }
    result = await runOnce(result.state);
  }
  return { result, holds };
}

/** One hold for one call: submitted without waiting (so `onHold` sees it pending), then waited for. */
async function decide<TContext, TAgent extends AnyAgent>(
  call: ToolCall,
  key: string,
  options: RunWithApprovalsOptions<TContext, TAgent>,
  signal: AbortSignal,
): Promise<HeldCall> {
  const extra = typeof options.context === 'function' ? options.context(call) : options.context;
  const request: HoldRequest = {
    tool_name: options.toolName ? options.toolName(call) : call.name,
    arguments: call.arguments,
    agent_identity: options.agentIdentity,
    context: { agent: call.agentName, ...(call.callId ? { call_id: call.callId } : {}), ...extra },
    idempotency_key: key,
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
  return {
    id: answer.id,
    tool,
    callId: call.callId,
    status: answer.status,
    // Only an explicit yes lets a call through: pending, expired or anything unknown is a no. Nor a
    // yes with changes: an approved interruption runs the model's arguments, not the changed ones.
    approved: answer.approved === true && !answer.rejected && answer.changed !== true,
    reason:
      answer.changed === true
        ? 'an approver changed its arguments, which this adapter cannot run (approve it unchanged)'
        : (answer.decision?.reason ?? null),
    statusUrl: answer.statusUrl,
    replayed: answer.replayed === true,
  };
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

function defaultKey(agentIdentity: { id: string }) {
  return (call: ToolCall): string => {
    // Without the model's call id there is nothing stable to find the hold again by on a retry.
    if (!call.callId)
      throw new Error(`runWithApprovals: the call of ${call.name} has no id; pass idempotencyKey`);
    return `openai-agents:${agentIdentity.id}:${call.callId}`;
  };
}

function describeCall(item: RunToolApprovalItem): ToolCall {
  const raw = item.rawItem as {
    type: string;
    callId?: unknown;
    id?: unknown;
    action?: unknown;
    operation?: unknown;
  };
  // Function and hosted tools carry JSON arguments; computer, shell and patch tools an action object.
  const value =
    typeof item.arguments === 'string' ? parseArguments(item.arguments) : (raw.action ?? raw.operation);
  const callId =
    typeof raw.callId === 'string' ? raw.callId : typeof raw.id === 'string' ? raw.id : undefined;
  return {
    name: item.name ?? item.toolName ?? raw.type,
    callId,
    arguments: isObject(value) ? value : value === undefined ? {} : { input: value },
    agentName: item.agent.name,
    item,
  };
}

/** JSON arguments; text that is not JSON is kept as text, so the approver sees what the model sent. */
function parseArguments(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
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
