/**
 * The Vercel AI SDK (`ai`, v6) with the Action Approval Service deciding its tool calls, two ways:
 * - `withApprovals(tools, options)`: each tool's `execute` first submits a hold and waits for the
 *   decision (the workspace's rules at once, or its approvers in their inbox, e-mail, Slack…); only an
 *   approved call runs, any other answer is a tool error the model sees.
 * - `answerApprovals(result, options)`: the SDK's own tool-approval flow (`needsApproval`) answered by
 *   the service instead of a person at the prompt: a hold per approval request, the decisions as the
 *   `tool-approval-response` message to send with the next call.
 * No dependency of its own: the client is our SDK's `ApprovalsClient` or anything with its `hold()`.
 */
import type { ModelMessage, ToolApprovalResponse, ToolSet } from 'ai';

/** What the adapter needs of `ApprovalsClient` (`@approvals/sdk`). */
export interface HoldClient {
  hold(request: {
    tool_name: string;
    arguments?: Record<string, unknown>;
    agent_identity: { id: string; label?: string };
    context?: Record<string, unknown>;
    idempotency_key: string;
    wait?: boolean;
    timeoutMs?: number;
    signal?: AbortSignal;
  }): Promise<HoldOutcome>;
}

export interface HoldOutcome {
  id: string;
  status: string;
  statusUrl: string;
  approved: boolean;
  rejected: boolean;
  decision: { reason: string | null } | null;
  /** An approver changed the arguments (a rule's `editable`): the tool runs with `arguments`. */
  changed?: boolean;
  arguments?: Record<string, unknown> | null;
}

export interface ApprovalOptions {
  client: HoldClient;
  /** Who acts: the agent identity every hold carries (rules can match it). */
  agent: { id: string; label?: string };
  /** The tool name the service knows the call by; default the AI SDK tool's name. */
  toolName?: (name: string) => string;
  /** Extra information for the approver (a ticket, a conversation id). */
  context?: Record<string, unknown>;
  /** How long to wait for a decision, in milliseconds (the client's default otherwise: 15 minutes). */
  timeoutMs?: number;
  /**
   * The hold's idempotency key; default `ai-sdk:<agent id>:<tool call id>`, so a retried step finds the
   * same hold. Override when your provider's tool call ids are not unique across conversations.
   */
  idempotencyKey?: (call: { toolName: string; toolCallId: string }) => string;
  /** Called once a hold is submitted, before waiting for it: e.g. to post `hold.statusUrl`. */
  onHold?: (hold: HoldOutcome, call: { toolName: string; toolCallId: string }) => void | Promise<void>;
}

/** A tool call the service did not approve: rejected, denied by a rule, expired, or still pending. */
export class ApprovalRefusedError extends Error {
  readonly hold: HoldOutcome;
  constructor(hold: HoldOutcome, toolName: string) {
    super(refusalText(hold, toolName));
    this.name = 'ApprovalRefusedError';
    this.hold = hold;
  }
}

/** What the model is told: the outcome and the approver's or the rule's reason, never more. */
function refusalText(hold: HoldOutcome, toolName: string): string {
  const reason = hold.decision?.reason ? `: ${hold.decision.reason}` : '';
  if (hold.approved && hold.changed)
    return `${toolName} was approved with changes, which a tool-approval answer cannot carry; it did not run.`;
  if (hold.status === 'pending')
    return `${toolName} is still waiting for approval (${hold.statusUrl}); it did not run.`;
  if (hold.status === 'expired') return `${toolName} was not approved before its deadline; it did not run.`;
  return `${toolName} was not approved (${hold.status})${reason}; it did not run.`;
}

/** A tool's input as the hold's arguments (always a JSON object). */
const argumentsOf = (input: unknown): Record<string, unknown> =>
  input !== null && typeof input === 'object' && !Array.isArray(input)
    ? (input as Record<string, unknown>)
    : { input };

/**
 * One hold for one tool call: submitted without waiting (so `onHold` sees it pending, as the Agents
 * adapter's does), then waited for. The call's id keeps a retried step on the same hold.
 */
async function holdFor(
  options: ApprovalOptions,
  call: { toolName: string; toolCallId: string; input: unknown },
  signal?: AbortSignal,
): Promise<HoldOutcome> {
  const request = {
    tool_name: options.toolName?.(call.toolName) ?? call.toolName,
    arguments: argumentsOf(call.input),
    agent_identity: options.agent,
    context: { ...options.context, tool_call_id: call.toolCallId },
    idempotency_key: options.idempotencyKey?.(call) ?? `ai-sdk:${options.agent.id}:${call.toolCallId}`,
    signal,
  };
  const submitted = await options.client.hold({ ...request, wait: false });
  await options.onHold?.(submitted, call);
  // The same key again: the service answers with the same hold, and the client waits for its decision.
  if (submitted.status !== 'pending') return submitted;
  return options.client.hold({ ...request, wait: true, timeoutMs: options.timeoutMs });
}

const isAsyncGeneratorFunction = (fn: unknown) =>
  Object.prototype.toString.call(fn) === '[object AsyncGeneratorFunction]';

/**
 * The same tools, each `execute` gated by a hold: it runs only once the service approves the call
 * (at once when a rule allows it). Otherwise it throws `ApprovalRefusedError`, which the AI SDK hands
 * to the model as the tool's error. Tools without `execute` are left as they are.
 */
export function withApprovals<TOOLS extends ToolSet>(tools: TOOLS, options: ApprovalOptions): TOOLS {
  const gated: Record<string, TOOLS[keyof TOOLS]> = {};
  for (const [name, tool] of Object.entries(tools) as [string, TOOLS[keyof TOOLS]][]) {
    const execute = tool.execute;
    if (!execute) {
      gated[name] = tool;
      continue;
    }
    /** The input to run: the tool's, or as an approver changed it. */
    const approve = async (input: unknown, execution: Parameters<typeof execute>[1]): Promise<unknown> => {
      const call = { toolName: name, toolCallId: execution.toolCallId, input };
      const hold = await holdFor(options, call, execution.abortSignal);
      if (!hold.approved) throw new ApprovalRefusedError(hold, name);
      if (!hold.changed || !hold.arguments) return input;
      // `argumentsOf` wrapped an input that is not an object as `{ input }`.
      return argumentsOf(input) === input ? hold.arguments : hold.arguments.input;
    };
    // A streaming tool (`async *execute`, preliminary results) stays a generator: the SDK tells them
    // apart by what `execute` returns, and a promise of a generator would be taken for the result.
    gated[name] = {
      ...tool,
      execute: isAsyncGeneratorFunction(execute)
        ? async function* (input: unknown, execution: Parameters<typeof execute>[1]) {
            yield* execute(await approve(input, execution), execution) as AsyncIterable<unknown>;
          }
        : async (input: unknown, execution: Parameters<typeof execute>[1]) => {
            return execute(await approve(input, execution), execution);
          },
    } as TOOLS[keyof TOOLS];
  }
  return gated as unknown as TOOLS;
}

/**
 * Answers the tool-approval requests of a `generateText` result (tools with `needsApproval`) by the
 * service: one hold per request, waited for in parallel. Returns the tool message to append to the
 * conversation (after `result.response.messages`) before calling `generateText` again, and the holds.
 * A refusal's reason reaches the model in the SDK's `execution-denied` result.
 */
export async function answerApprovals(
  result: {
    content: readonly {
      type: string;
      approvalId?: string;
      toolCall?: { toolName: string; toolCallId: string; input: unknown };
    }[];
  },
  options: ApprovalOptions & { signal?: AbortSignal },
): Promise<{ messages: ModelMessage[]; holds: HoldOutcome[] }> {
  const requests = result.content.filter((part) => part.type === 'tool-approval-request');
  if (requests.length === 0) return { messages: [], holds: [] };
  const holds = await Promise.all(requests.map((part) => holdFor(options, part.toolCall!, options.signal)));
  const responses: ToolApprovalResponse[] = requests.map((part, i) => {
    const hold = holds[i]!;
    // The SDK runs an approved call with the model's input: changes could not be applied, so no.
    const approved = hold.approved && !hold.changed;
    return {
      type: 'tool-approval-response',
      approvalId: part.approvalId!,
      approved,
      ...(approved ? {} : { reason: refusalText(hold, part.toolCall!.toolName) }),
    };
  });
  return { messages: [{ role: 'tool', content: responses }], holds };
}
