/**
 * A tools/call through the MCP proxy (interface.md, MCP proxy endpoint): the same rules, approvers,
 * deadlines and evidence as the Hold API. Allowed calls go upstream at once; held calls are answered
 * at once with the envelope; denied calls are refused. Identical calls are one operation. Refusals are
 * typed (`Refusal`): the MCP endpoint says them in JSON-RPC (src/mcp/refusals.ts).
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import {
  type Envelope,
  envelopeContent,
  envelopeOf,
  type EnvelopeStatus,
  unknownReference,
} from '../domain/envelope.ts';
import type { Environment, Hold } from '../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN, randomId } from '../domain/ids.ts';
import { jsonDepth, MAX_JSON_DEPTH, NON_FINITE_MESSAGE, nonFiniteNumberPath } from '../domain/json-limits.ts';
import { findHold, findOpenProxyHold } from '../store/holds.ts';
import type { McpServer } from '../store/mcp-servers.ts';
import { findTool, listTools, recordDiscoveredTool } from '../store/tools.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { expireIfOverdue } from './expire-holds.ts';
import { getHold } from './read-hold.ts';
import { allowedCallMeta } from './receipts.ts';
import { renewingOnProgress } from './record-execution.ts';
import { sha256Hex } from './hashing.ts';
import { BOUND_AGENT_FIELD, type Requester, statusUrl, submitHold } from './submit-hold.ts';

export const CHECK_STATUS_TOOL = 'service_check_status';

export interface CallToolResult {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

/** What the upstream may ask of the client while a call runs: the MCP client features. */
export interface ClientFeatureRequest {
  method: 'sampling/createMessage' | 'elicitation/create' | 'roots/list';
  params?: Record<string, unknown>;
}

/**
 * What a live client call relays: its cancellation, the upstream's progress back to it, and the
 * upstream's requests to a client (sampling, elicitation, roots) made during the call.
 */
export interface CallRelay {
  signal?: AbortSignal;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
  /**
   * Sends such a request to the client that made the call (on the call's answer stream) and
   * resolves with the client's result, or rejects with its JSON-RPC error (`code`, `message`,
   * `data`). `signal` aborts it (the upstream cancelled its request). Absent when no client can be
   * asked: an approved call runs with no client there, and a 2026-era client takes no requests.
   */
  ask?: (request: ClientFeatureRequest, signal: AbortSignal) => Promise<Record<string, unknown>>;
  /** Told the hold of an allowed call as it is sent upstream (a task then begins `working`). */
  onRunning?: (hold: Hold) => void;
  /** Sent upstream in the tools/call's `_meta`: the hold's receipt (receipts.ts). */
  meta?: Record<string, unknown>;
}

/** The port to upstream MCP servers (the proxy's client pool). */
export interface Upstreams {
  callTool(
    server: McpServer,
    name: string,
    args: Record<string, unknown>,
    relay?: CallRelay,
  ): Promise<CallToolResult>;
  /** Every tool the upstream lists now, all pages. */
  listTools(server: McpServer, signal?: AbortSignal): Promise<Record<string, unknown>[]>;
}

export interface ProxyCaller {
  workspace: Workspace;
  environment: Environment;
  server: McpServer;
  agent: { id: string; label: string | null };
  /** The credential: a bound key's agent, and whose own request a hold is. */
  requester: Requester;
  /** `X-Service-Session`: when sent, identical calls are one operation within it only. */
  serviceSession: string | null;
  /** The 2025-era MCP session the call came in: its stream hears when a held call is decided. */
  mcpSession: string | null;
  /** The call asked to be answered as a task (2025-11-25): its session also hears the task's status. */
  asTask?: boolean;
}

/** Why a tools/call gets no result. */
export type Refusal =
  /** A rule denied it: the envelope says so. */
  | { kind: 'denied'; envelope: Envelope }
  /** Its name or arguments are not what the call takes; `problem` says which, never a value. */
  | { kind: 'invalid_arguments'; problem: string }
  /** The upstream lists no tool of this name. */
  | { kind: 'unknown_tool' }
  /** The workspace's monthly hold limit is used up. */
  | { kind: 'quota_reached' }
  /** The workspace takes calls from bound API keys only, and this key is not bound. */
  | { kind: 'key_not_bound' }
  /** The agent named is not the one the API key is bound to. */
  | { kind: 'agent_not_bound' }
  /** It ran and failed (the client cancelled it, the upstream timed out, cannot be reached or
   * answered an error): the error recorded as its execution's, which the client gets as it is. */
  | { kind: 'call_failed'; failure: CallFailure };

/** A refusal, thrown to the transport, which says it in its own terms. */
export class ProxyRefusal extends Error {
  readonly refusal: Refusal;
  constructor(refusal: Refusal) {
    super(refusal.kind);
    this.refusal = refusal;
  }
}

function refuse(refusal: Refusal): never {
  throw new ProxyRefusal(refusal);
}

export const checkStatusTool = {
  name: CHECK_STATUS_TOOL,
  description:
    'Checks an action that is waiting for human approval: pass the reference (svc_pa_…) from the held answer. ' +
    'Returns its status, and the result once it was carried out.',
  inputSchema: {
    type: 'object' as const,
    properties: { reference: { type: 'string', description: 'The svc_pa_ reference of the held call.' } },
    required: ['reference'],
  },
};

const hasOutputSchema = (definition: Record<string, unknown> | null | undefined) =>
  !!definition?.outputSchema;

/** Envelope states in which the action was not carried out as asked. */
const NOT_DONE = new Set<EnvelopeStatus>(['denied', 'expired', 'error']);

/** The held, denied, approved or executed state of a hold as a tool result. */
export function answerFor(
  ctx: ServiceContext,
  hold: Hold,
  options: { deduplicated?: boolean; outputSchema?: boolean } = {},
) {
  const envelope = envelopeOf(hold, statusUrl(ctx, hold.id), options);
  const result = hold.execution?.status === 'executed' ? (hold.execution.outcome as CallToolResult) : null;
  // A rejection, an expiry or a failed execution is an error for the model: the action was not carried
  // out as asked (and an outcome that is not known says so in its message).
  const failed = NOT_DONE.has(envelope.status) || result?.isError === true;
  // A tool with a declared output is listed as also taking the held answer's structured form
  // (held-output-schema.ts): a call still waiting says so in it, and is no error.
  const structured =
    result?.structuredContent ??
    (options.outputSchema && !failed && envelope.status !== 'executed' ? { service: envelope } : undefined);
  return {
    content: [...envelopeContent(envelope), ...(result?.content ?? [])],
    ...(failed ? { isError: true } : {}),
    ...(structured !== undefined ? { structuredContent: structured } : {}),
  };
}

export async function checkStatus(ctx: ServiceContext, caller: ProxyCaller, args: Record<string, unknown>) {
  const reference = args.reference;
  if (typeof reference !== 'string')
    return refuse({ kind: 'invalid_arguments', problem: 'reference must be a string' });
  const known =
    HOLD_REFERENCE_PATTERN.test(reference) && (await findHold(ctx.db, caller.workspace.id, reference));
  if (!known) {
    const shown = reference.slice(0, 100);
    return { content: envelopeContent(unknownReference(shown, statusUrl(ctx, shown))) };
  }
  // Read through getHold: one found past its deadline is expired first, never shown as held.
  return answerFor(ctx, await getHold(ctx, caller.workspace.id, reference));
}

/**
 * Whether the upstream lists this tool: it did when it was last listed, or it does now (its list is
 * asked for once more, and what it lists is registered, as tools/list does). When it cannot be
 * listed (the upstream is down), it is taken as listed: the call is held or denied by the rules, and
 * an approved one runs when the upstream is back.
 */
async function upstreamHasTool(
  ctx: ServiceContext,
  upstreams: Upstreams,
  caller: ProxyCaller,
  name: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const known = await findTool(ctx.db, caller.workspace.id, caller.server.name, name);
  if (known?.definition) return true;
  // An upstream that cannot list its tools now cannot say either: the rules decide, as for any call.
  const listed = await upstreams.listTools(caller.server, signal).catch(() => null);
  if (listed === null) return true;
  await registerDiscoveredTools(ctx, caller, listed);
  return listed.some((tool) => tool.name === name);
}

/** A proxied call's answer, and the hold it made or joined (none for `service_check_status`). */
export interface ProxyAnswer {
  result: CallToolResult;
  hold?: Hold;
}

export async function callThroughProxy(
  ctx: ServiceContext,
  upstreams: Upstreams,
  caller: ProxyCaller,
  name: string,
  args: Record<string, unknown>,
  relay: CallRelay = {},
): Promise<ProxyAnswer> {
  if (name === CHECK_STATUS_TOOL) return { result: await checkStatus(ctx, caller, args) };
  checkCallLimits(name, args);
  const { workspace, server } = caller;
  // A name the upstream does not have is refused as the upstream would (no hold, nobody paged).
  if (!(await upstreamHasTool(ctx, upstreams, caller, name, relay.signal))) refuse({ kind: 'unknown_tool' });
  const callKey = callKeyOf(caller, name, args);
  // An identical call whose hold ran out of time is a new request: expire that hold first.
  const open = await findOpenProxyHold(ctx.db, workspace.id, callKey);
  if (open?.status === 'pending' && open.expiresAt !== null && open.expiresAt <= ctx.now()) {
    await expireIfOverdue(ctx, workspace.id, open.id);
  }
  let submitted;
  try {
    submitted = await submitHold(
      ctx,
      { workspace, environment: caller.environment, requester: caller.requester },
      {
        connection: server.name,
        toolName: name,
        arguments: args,
        agent: caller.agent,
        context: {
          mcp_server: server.slug,
          ...(caller.serviceSession !== null && { session: caller.serviceSession }),
          // The session whose stream hears the decision.
          ...(caller.mcpSession !== null && { mcp_session: caller.mcpSession }),
          ...(caller.asTask && { mcp_task: true }),
        },
        idempotencyKey: randomId('mcp_', 16),
        proxy: { mcpServerId: server.id, callKey },
      },
    );
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'hold_limit_reached')
      refuse({ kind: 'quota_reached' });
    if (error instanceof ServiceError && error.code === 'key_not_bound') refuse({ kind: 'key_not_bound' });
    if (error instanceof ServiceError && error.issues[0]?.field === BOUND_AGENT_FIELD)
      refuse({ kind: 'agent_not_bound' });
    throw error;
  }
  const { hold } = submitted;
  const deduplicated = !submitted.created;
  if (hold.status === 'rejected' && hold.channel === 'rule')
    refuse({ kind: 'denied', envelope: envelopeOf(hold, statusUrl(ctx, hold.id), { deduplicated }) });
  if (hold.status !== 'auto_allowed') {
    const tool = await findTool(ctx.db, workspace.id, server.name, name);
    return {
      result: answerFor(ctx, hold, { deduplicated, outputSchema: hasOutputSchema(tool?.definition) }),
      hold,
    };
  }
  const meta = await allowedCallMeta(ctx, workspace.slug, hold);
  return runAllowedCall(ctx, upstreams, server, hold, { name, args, relay: { ...relay, meta } });
}

/**
 * What makes calls identical (decisions.md, amendment "MCP deduplication"): the caller's credential (the
 * API key, or the OAuth grant, which is one client's for one member), the server, the tool and the
 * canonical arguments, within `X-Service-Session` when sent, else within the agent's identity
 * (interface.md: "the agent identity serves as the session"). Never an MCP session or a JSON-RPC id:
 * hosted assistants open a session per call and send id 1 every time.
 */
export function callKeyOf(caller: ProxyCaller, tool: string, args: Record<string, unknown>): string {
  const { requester } = caller;
  const credential = requester.kind === 'key' ? `key:${requester.keyId}` : `oauth:${requester.grantId}`;
  const scope =
    caller.serviceSession !== null ? { session: caller.serviceSession } : { agent: caller.agent.id };
  return sha256Hex(canonicalJson({ server: caller.server.id, tool, arguments: args, credential, ...scope }));
}

/** The Core API's limits: a tool name is stored with the hold, arguments are hashed and stored. */
function checkCallLimits(name: string, args: Record<string, unknown>) {
  if (name.length < 1 || name.length > 200)
    refuse({ kind: 'invalid_arguments', problem: 'The tool name must be 1-200 characters' });
  if (jsonDepth(args) > MAX_JSON_DEPTH)
    refuse({
      kind: 'invalid_arguments',
      problem: `Arguments must not be nested deeper than ${MAX_JSON_DEPTH} levels`,
    });
  // `1e400` parses as Infinity, which no hash or store can hold: named, never repeated.
  const nonFinite = nonFiniteNumberPath(args);
  if (nonFinite)
    refuse({
      kind: 'invalid_arguments',
      problem: `${['arguments', ...nonFinite].join('.')}: ${NON_FINITE_MESSAGE}`,
    });
}

/** Allowed: run it now and answer with the upstream's own result; the result is recorded right after. */
async function runAllowedCall(
  ctx: ServiceContext,
  upstreams: Upstreams,
  server: McpServer,
  hold: Hold,
  { name, args, relay }: { name: string; args: Record<string, unknown>; relay: CallRelay },
): Promise<ProxyAnswer> {
  const startedAt = hold.execution?.startedAt ?? ctx.now();
  const renewing = renewingOnProgress(ctx, hold);
  const onProgress: CallRelay['onProgress'] = (progress) => {
    renewing.onProgress();
    relay.onProgress?.(progress);
  };
  try {
    relay.onRunning?.(hold);
    const result = await upstreams.callTool(server, name, args, { ...relay, onProgress });
    await renewing.settled();
    ctx.executions.record(hold, { status: 'executed', startedAt, outcome: result });
    // The hold as it will be once its result is recorded.
    const completed = { status: 'executed' as const, startedAt, completedAt: ctx.now(), outcome: result };
    return { result, hold: { ...hold, execution: completed } };
  } catch (error) {
    const failure: CallFailure = relay.signal?.aborted
      ? { code: CALL_FAILED, message: 'The client cancelled the call' }
      : describeFailure(error);
    await renewing.settled();
    ctx.executions.record(hold, { status: 'failed', startedAt, outcome: failure });
    return refuse({ kind: 'call_failed', failure });
  }
}

/**
 * Why a proxied call has no result, as its execution's error records it (the Hold API's
 * `execution.error`, decisions.md: the call's JSON-RPC error, which the client gets as it is).
 */
export interface CallFailure {
  code: number;
  message: string;
  /** `unknown`: the request was sent and never answered, so it may or may not have run upstream. */
  outcome?: 'unknown';
}

/**
 * The codes of an execution error the service records itself (the upstream's own errors keep
 * theirs): the call failed (-32000), or no answer came in time (-32001, the MCP request timeout).
 */
export const CALL_FAILED = -32000;
export const CALL_TIMED_OUT = -32001;

/**
 * A call that was sent and never answered (the port's errors with `outcome: 'unknown'`: its server's
 * call timeout passed, -32001, or the connection was lost mid-request) keeps its code and says it may
 * or may not have run. A JSON-RPC error from upstream keeps its code. A request timeout elsewhere is
 * -32001 "Request timed out". Anything else never got to the upstream: "cannot be reached".
 */
export function describeFailure(error: unknown): CallFailure {
  const { code, message, outcome } = error as { code?: unknown; message?: string; outcome?: unknown };
  const text = (fallback: string) =>
    String(message ?? fallback)
      .replace(/^MCP error -?\d+: /, '')
      .slice(0, 500);
  if (typeof code === 'number' && Number.isSafeInteger(code) && code < 0) {
    return outcome === 'unknown'
      ? { code, message: text('No answer from the upstream MCP server'), outcome: 'unknown' }
      : { code, message: text('upstream error') };
  }
  // The MCP SDK's own timeout (SdkErrorCode.RequestTimeout), of a request other than tools/call.
  if (code === 'REQUEST_TIMEOUT') return { code: CALL_TIMED_OUT, message: 'Request timed out' };
  return { code: CALL_FAILED, message: 'The upstream MCP server cannot be reached' };
}

/**
 * tools/list: every listed tool is registered under the server's connection (new ones fail-closed).
 * Only what changed is written, so listing again and again costs one read.
 */
export async function registerDiscoveredTools(
  ctx: ServiceContext,
  caller: ProxyCaller,
  tools: Record<string, unknown>[],
): Promise<void> {
  const { workspace, server } = caller;
  const known = new Map(
    (await listTools(ctx.db, workspace.id))
      .filter((tool) => tool.connection === server.name)
      .map((tool) => [tool.name, canonicalJson(tool.definition)]),
  );
  const changed = tools.filter((tool) => known.get(String(tool.name)) !== canonicalJson(tool));
  if (changed.length === 0) return;
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspace.id);
    const added: string[] = [];
    for (const tool of changed) {
      const name = String(tool.name);
      if (!(await findTool(tx, workspace.id, server.name, name))) added.push(name);
      await recordDiscoveredTool(tx, workspace.id, server.name, name, tool);
    }
    if (added.length > 0) {
      await chain.append('tool.registered', {
        connection: server.name,
        tool_names: added,
        classification: 'new',
      });
    }
  });
}

/** What a session is told when a call it held changed: where to say it, and the answer it now has. */
export interface HeldCallNotice {
  serverId: string;
  mcpSession: string;
  status: Hold['status'];
  answer: CallToolResult;
}

/** The 2025-era MCP session a proxied call came in (its stream hears what becomes of it), or null. */
export function mcpSessionOf(hold: Hold): { serverId: string; mcpSession: string } | null {
  const mcpSession = hold.context.mcp_session;
  if (hold.mcpServerId === null || typeof mcpSession !== 'string') return null;
  return { serverId: hold.mcpServerId, mcpSession };
}

/** A hold as it is stored, to tell its MCP session what became of it. */
export const storedHold = (ctx: ServiceContext, workspaceId: string, holdId: string) =>
  findHold(ctx.db, workspaceId, holdId);

/** For a change to a hold: the notice its MCP session gets, or null (not a held proxy call, or no session). */
export function heldCallNotice(ctx: ServiceContext, hold: Hold): HeldCallNotice | null {
  const session = mcpSessionOf(hold);
  if (!session || hold.submitStatus !== 'pending' || hold.status === 'pending') return null;
  return { ...session, status: hold.status, answer: answerFor(ctx, hold) };
}
