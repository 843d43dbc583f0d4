/**
 * A tools/call through the MCP proxy (interface.md, MCP proxy endpoint): the same rules, approvers,
 * deadlines and evidence as the Hold API. Allowed calls go upstream at once; held calls are answered
 * at once with the envelope; denied calls are refused with -32003. Identical calls are one operation.
 */
import { canonicalJson } from '../../packages/sdk/src/canonical-json.ts';
import { envelopeContent, envelopeOf, unknownReference } from '../domain/envelope.ts';
import type { Environment, Hold } from '../domain/hold.ts';
import { HOLD_REFERENCE_PATTERN, randomId } from '../domain/ids.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../domain/json-limits.ts';
import { findHold, findOpenProxyHold, updateHoldState } from '../store/holds.ts';
import type { McpServer } from '../store/mcp-servers.ts';
import { findTool, listTools, recordDiscoveredTool } from '../store/tools.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { expireIfOverdue } from './expire-holds.ts';
import { getHold } from './read-hold.ts';
import { sha256Hex } from './hashing.ts';
import { statusUrl, submitHold } from './submit-hold.ts';

export const CHECK_STATUS_TOOL = 'service_check_status';
export const DENIED_CODE = -32003;

export interface CallToolResult {
  content: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
  [key: string]: unknown;
}

/** The port to upstream MCP servers (the proxy's client pool). */
/** What a live client call relays: its cancellation, and the upstream's progress back to it. */
export interface CallRelay {
  signal?: AbortSignal;
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

export interface Upstreams {
  callTool(
    server: McpServer,
    name: string,
    args: Record<string, unknown>,
    relay?: CallRelay,
  ): Promise<CallToolResult>;
}

export interface ProxyCaller {
  workspace: Workspace;
  environment: Environment;
  server: McpServer;
  agent: { id: string; label: string | null };
  /** X-Service-Session, or the agent's id: the frame in which identical calls are one operation. */
  session: string;
}

/** A refusal the transport sends as a JSON-RPC error. */
export class ProxyRefusal extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
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

/** The held, denied, approved or executed state of a hold as a tool result. */
function answerFor(
  ctx: ServiceContext,
  hold: Hold,
  options: { deduplicated?: boolean; outputSchema?: boolean } = {},
) {
  const envelope = envelopeOf(hold, statusUrl(ctx, hold.id), options);
  const result = hold.execution?.status === 'executed' ? (hold.execution.outcome as CallToolResult) : null;
  return {
    content: [...envelopeContent(envelope), ...(result?.content ?? [])],
    // A client validates a tool's declared output; a held answer has none, so it is marked an error
    // there (and only there) to pass that check.
    ...((options.outputSchema && envelope.status !== 'executed') || result?.isError ? { isError: true } : {}),
    ...(result?.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}),
  };
}

function refuseDenied(ctx: ServiceContext, hold: Hold, deduplicated = false): never {
  throw new ProxyRefusal(DENIED_CODE, 'Denied by policy', {
    service: envelopeOf(hold, statusUrl(ctx, hold.id), { deduplicated }),
  });
}

export async function checkStatus(ctx: ServiceContext, caller: ProxyCaller, args: Record<string, unknown>) {
  const reference = args.reference;
  if (typeof reference !== 'string') throw new ProxyRefusal(-32602, 'reference must be a string');
  const known =
    HOLD_REFERENCE_PATTERN.test(reference) && (await findHold(ctx.db, caller.workspace.id, reference));
  if (!known) {
    const shown = reference.slice(0, 100);
    return { content: envelopeContent(unknownReference(shown, statusUrl(ctx, shown))) };
  }
  // Read through getHold: one found past its deadline is expired first, never shown as held.
  return answerFor(ctx, await getHold(ctx, caller.workspace.id, reference));
}

export async function callThroughProxy(
  ctx: ServiceContext,
  upstreams: Upstreams,
  caller: ProxyCaller,
  name: string,
  args: Record<string, unknown>,
  relay: CallRelay = {},
): Promise<CallToolResult> {
  if (name === CHECK_STATUS_TOOL) return checkStatus(ctx, caller, args);
  // The Core API's limits: a tool name is stored with the hold, arguments are hashed and stored.
  if (name.length < 1 || name.length > 200)
    throw new ProxyRefusal(-32602, 'The tool name must be 1-200 characters');
  if (jsonDepth(args) > MAX_JSON_DEPTH)
    throw new ProxyRefusal(-32602, `Arguments must not be nested deeper than ${MAX_JSON_DEPTH} levels`);
  const { workspace, server } = caller;
  const callKey = sha256Hex(
    canonicalJson({ server: server.id, tool: name, arguments: args, session: caller.session }),
  );
  // An identical call whose hold ran out of time is a new request: expire that hold first.
  const open = await findOpenProxyHold(ctx.db, workspace.id, callKey);
  if (open?.status === 'pending' && open.expiresAt !== null && open.expiresAt <= ctx.now()) {
    await expireIfOverdue(ctx, workspace.id, open.id);
  }
  let submitted;
  try {
    submitted = await submitHold(
      ctx,
      { workspace, environment: caller.environment },
      {
        connection: server.name,
        toolName: name,
        arguments: args,
        agent: caller.agent,
        context: { mcp_server: server.slug, session: caller.session },
        idempotencyKey: randomId('mcp_', 16),
        proxy: { mcpServerId: server.id, callKey },
      },
    );
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'hold_limit_reached') {
      throw new ProxyRefusal(-32000, 'Monthly hold limit reached');
    }
    throw error;
  }
  const { hold } = submitted;
  const deduplicated = !submitted.created;
  if (hold.status === 'rejected' && hold.channel === 'rule') refuseDenied(ctx, hold, deduplicated);
  if (hold.status !== 'auto_allowed') {
    const tool = await findTool(ctx.db, workspace.id, server.name, name);
    return answerFor(ctx, hold, { deduplicated, outputSchema: hasOutputSchema(tool?.definition) });
  }
  // Allowed: run it now and answer with the upstream's own result.
  const startedAt = ctx.now();
  try {
    const result = await upstreams.callTool(server, name, args, relay);
    await recordExecution(ctx, hold, { status: 'executed', startedAt, outcome: result });
    return result;
  } catch (error) {
    const failure = relay.signal?.aborted
      ? { code: -32000, message: 'The client cancelled the call' }
      : describeFailure(error);
    await recordExecution(ctx, hold, { status: 'failed', startedAt, outcome: failure });
    throw new ProxyRefusal(failure.code, failure.message);
  }
}

/** A JSON-RPC error from upstream keeps its code; anything else is "upstream unavailable". */
export function describeFailure(error: unknown): { code: number; message: string } {
  const { code, message } = error as { code?: unknown; message?: string };
  if (typeof code === 'number' && Number.isSafeInteger(code) && code < 0) {
    return {
      code,
      message: String(message ?? 'upstream error')
        .replace(/^MCP error -?\d+: /, '')
        .slice(0, 500),
    };
  }
  return { code: -32000, message: 'The upstream MCP server cannot be reached' };
}

/** Stores what the proxy ran, with its evidence entry; an approved hold becomes executed or failed. */
export async function recordExecution(
  ctx: ServiceContext,
  hold: Hold,
  execution: { status: 'executed' | 'failed'; startedAt: number; outcome: unknown },
): Promise<Hold> {
  const done = await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, hold.workspaceId);
    const current = (await findHold(tx, hold.workspaceId, hold.id, true))!;
    const next: Hold = {
      ...current,
      status: current.status === 'approved' ? execution.status : current.status,
      execution: { ...execution, completedAt: ctx.now() },
    };
    await updateHoldState(tx, next);
    await chain.append(`hold.${execution.status}`, {
      hold: hold.id,
      ...(execution.status === 'executed'
        ? {
            is_error: (execution.outcome as CallToolResult).isError === true,
            result_sha256: sha256Hex(canonicalJson(execution.outcome)),
          }
        : { error: execution.outcome }),
    });
    return next;
  });
  ctx.holdEvents.publish(hold.id, hold.workspaceId);
  return done;
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
