/**
 * The MCP server the proxy shows a client, made fresh for each request: the upstream's tools plus
 * `service_check_status`, every tools/call through the rules, and the rest of what the upstream
 * offers (resources, prompts, completions, logging, list-change notifications) passed through.
 */
import { randomUUID } from 'node:crypto';
import {
  isJSONRPCResponse,
  type JSONRPCRequest,
  type ProgressToken,
  ProtocolError,
  type RequestId,
  Server,
  type ServerCapabilities,
  type Transport,
} from '@modelcontextprotocol/server';
import type { Client } from '@modelcontextprotocol/client';
import type { FastifyBaseLogger } from 'fastify';
import { listedWithHeldAnswer } from '../domain/held-output-schema.ts';
import type { Hold } from '../domain/hold.ts';
import type { ServiceContext } from '../services/context.ts';
import { ChainFrozenError, describeSafely, isStorageUnavailable } from '../services/errors.ts';
import {
  callThroughProxy,
  type CallRelay,
  checkStatusTool,
  type ProxyCaller,
  describeFailure,
  type ProxyAnswer,
  ProxyRefusal,
  registerDiscoveredTools,
} from '../services/proxy-call.ts';
import { setMcpSessionLevel } from '../services/mcp-sessions.ts';
import { callProgress } from './call-progress.ts';
import { askInClient, askInRounds, type CallRound } from './client-approval.ts';
import { refusalError } from './refusals.ts';
import { type ClientAnswer, isLogLevel, type McpRelay } from './relay.ts';
import { toolCallAnswer } from './task-call.ts';
import { serveTasks, taskCapabilities } from './tasks.ts';
import type { UpstreamPool } from './upstream.ts';
import { CALL_ENDED } from './upstream-call.ts';

export interface ProxyRequest {
  caller: ProxyCaller;
  /** The request's log, for failures that are not refusals. */
  log: FastifyBaseLogger;
  /** The 2025-era session the request belongs to; null for 2026-era requests and initialize. */
  mcpSession: string | null;
  /** The request is 2025-era (initialize included). */
  legacy: boolean;
}

/**
 * While the upstream cannot be reached its capabilities are unknown: everything it could offer is
 * offered, with list changes, so a session opened now works once it is back (each method answers
 * that the upstream cannot be reached meanwhile) and hears of its lists when it returns.
 */
const DURING_OUTAGE: ServerCapabilities = {
  tools: { listChanged: true },
  resources: { listChanged: true, subscribe: true },
  prompts: { listChanged: true },
  completions: {},
  logging: {},
};

/**
 * What the proxy offers: the upstream's capabilities it can serve, and tools always. Resource
 * subscriptions need a 2025-era session (updates come on its stream). `null`: the upstream is down.
 */
function capabilitiesFrom(known: ServerCapabilities | null, sessioned: boolean): ServerCapabilities {
  const offered = known ?? DURING_OUTAGE;
  const changes = (offer: { listChanged?: boolean } | undefined) =>
    offer?.listChanged ? { listChanged: true } : {};
  const subscribe = sessioned && offered.resources?.subscribe ? { subscribe: true } : {};
  return {
    tools: changes(offered.tools),
    ...(offered.resources ? { resources: { ...changes(offered.resources), ...subscribe } } : {}),
    ...(offered.prompts ? { prompts: changes(offered.prompts) } : {}),
    ...(offered.completions ? { completions: {} } : {}),
    ...(offered.logging ? { logging: {} } : {}),
  };
}

/**
 * The server of one request. A 2025-era client answers a request of the proxy's (the upstream's
 * sampling, elicitation or roots, relayed) in a later POST of its session, which another such
 * server receives: the answer goes to the call that waits for it (`takeAnswer`), not to this
 * server's own protocol, which sent no request.
 */
class ProxyMcpServer extends Server {
  takeAnswer: (answer: ClientAnswer) => boolean = () => false;

  override async connect(transport: Transport): Promise<void> {
    await super.connect(transport);
    const dispatch = transport.onmessage;
    transport.onmessage = (message, extra) => {
      if (isJSONRPCResponse(message) && this.takeAnswer(message as ClientAnswer)) return;
      dispatch?.(message, extra);
    };
  }
}

/** Where a tools/call is answered: its id, and the answer stream that also carries what the call sends first. */
export interface CallStream {
  id: RequestId;
  /** Aborted when the client goes away before its answer is complete. */
  signal: AbortSignal;
  /** A notification related to the call (its progress). */
  notify(notification: { method: string; params: Record<string, unknown> }): Promise<void>;
  /** A request of the proxy's to the client, related to the call. */
  request(message: JSONRPCRequest): Promise<void>;
  /** A 2026-era call's round: how its client may be asked, and what it answered (client-approval.ts). */
  round?: CallRound;
}

/**
 * How a call asks its 2025-era client what the upstream asks (`CallRelay.ask`): the request goes on
 * the call's own answer stream, under an id of the proxy's (each request's server would start
 * counting at 0 again), and the client's answer comes back through the relay, in a later POST of the
 * session that must reach this instance. Cancelled when the upstream cancels its request or the call
 * ends: the client is told (`notifications/cancelled`).
 */
function askClient(relay: McpRelay, sessionId: string, call: CallStream): NonNullable<CallRelay['ask']> {
  return (request, signal) =>
    new Promise((resolve, reject) => {
      const id = `approvals-${randomUUID()}`;
      const onAbort = () => {
        expected.done();
        void call
          .notify({
            method: 'notifications/cancelled',
            params: { requestId: id, reason: 'no longer needed' },
          })
          .catch(() => undefined);
        reject(new ProtocolError(-32000, `${request.method} was cancelled before the client answered`));
      };
      const expected = relay.expectAnswer(sessionId, id, (answer) => {
        signal.removeEventListener('abort', onAbort);
        if (answer.error)
          reject(new ProtocolError(answer.error.code, answer.error.message, answer.error.data));
        else resolve(answer.result ?? {});
      });
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      const message = { jsonrpc: '2.0' as const, id, method: request.method, params: request.params ?? {} };
      call.request(message).catch((error: unknown) => {
        expected.done();
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
}

/**
 * Runs a request that goes upstream with a signal that aborts when the client goes away or, in a
 * 2025-era session, cancels it by id in a later request: the upstream request is cancelled too.
 */
function live<T>(
  relay: McpRelay,
  mcpSession: string | null,
  request: { id: unknown; signal: AbortSignal },
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  if (!mcpSession) return work(request.signal);
  const tracked = relay.track(mcpSession, request.id, request.signal);
  return work(tracked.signal).finally(tracked.done);
}

/**
 * What a call answers when it fails, as a `ProtocolError`. A refusal is said as refusals.ts says it;
 * any other failure gets a fixed text, never the error's own (it may carry a value of the request or
 * of the database): storage that cannot be reached says so, the rest is logged under a reference
 * the client is given.
 */
export function callError(error: unknown, log: Pick<FastifyBaseLogger, 'warn' | 'error'>): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (error instanceof ProxyRefusal) return refusalError(error.refusal);
  if (isStorageUnavailable(error)) {
    log.warn(describeSafely(error.cause), 'storage unavailable');
    return new ProtocolError(-32000, 'Service Unavailable: storage is unreachable, retry later');
  }
  if (error instanceof ChainFrozenError)
    return new ProtocolError(
      -32000,
      "Service Unavailable: the workspace's evidence chain failed its check and is frozen until an operator re-anchors it",
    );
  const referenceId = randomUUID();
  log.error({ referenceId, ...describeSafely(error) }, 'internal error');
  return new ProtocolError(-32603, 'Internal error', { referenceId });
}

/**
 * A tools/call through the rules, answered on `call`: the upstream's progress goes back on it (when
 * the client asked for progress), with the proxy's own while the upstream is silent (call-progress.ts),
 * and so do the upstream's sampling, elicitation and roots requests during the call, to a 2025-era
 * session's client, which takes requests on the call's answer stream.
 * A 2026-era client takes none (its revision asks through input_required results, which are not
 * relayed). A request still unanswered when the call ends is given up (the upstream stopped waiting).
 * Refusals are thrown as the JSON-RPC errors the client gets.
 */
export async function runToolCall(
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  relay: McpRelay,
  { caller, mcpSession, legacy, log }: ProxyRequest,
  params: { name: string; arguments?: Record<string, unknown>; _meta?: { progressToken?: ProgressToken } },
  call: CallStream,
  onRunning?: (hold: Hold) => void,
): Promise<ProxyAnswer> {
  const progressToken = params._meta?.progressToken;
  const progress = progressToken === undefined ? undefined : callProgress(call.notify, progressToken);
  const asker = mcpSession && legacy ? askClient(relay, mcpSession, call) : undefined;
  const ended = new AbortController();
  try {
    return await live(relay, mcpSession, call, async (signal) => {
      const ask: CallRelay['ask'] =
        asker &&
        ((question, cancelled) => asker(question, AbortSignal.any([signal, ended.signal, cancelled])));
      const answer = await callThroughProxy(ctx, upstreams, caller, params.name, params.arguments ?? {}, {
        signal,
        onProgress: progress?.send,
        ask,
        onRunning,
      });
      // Held where the rule lets the requester approve: they are asked in this client (client-approval.ts).
      if (ask) return askInClient(ctx, caller, answer, ask, { signal, log });
      return call.round ? askInRounds(ctx, caller, answer, call.round, { signal, log }) : answer;
    });
  } catch (error) {
    throw callError(error, log);
  } finally {
    ended.abort(CALL_ENDED);
    progress?.stop();
  }
}

export function proxyServer(
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  relay: McpRelay,
  proxied: ProxyRequest,
  offered: ServerCapabilities | null,
): Server {
  const { caller, mcpSession, legacy } = proxied;
  const capabilities = { ...capabilitiesFrom(offered, legacy), ...taskCapabilities(legacy) };
  const server = new ProxyMcpServer({ name: 'approvals-proxy', version: '1' }, { capabilities });
  // Answers of this session's client to requests the proxy relayed to it during a call.
  if (mcpSession) server.takeAnswer = (answer) => relay.answer(mcpSession, answer);
  if (mcpSession) {
    server.setNotificationHandler('notifications/cancelled', (notification) =>
      relay.cancel(mcpSession, notification.params.requestId),
    );
  }
  serveTools(server, ctx, upstreams, relay, proxied);
  serveTasks(server, ctx, caller, legacy);
  passThrough(server, capabilities, upstreams, relay, proxied);
  if (capabilities.resources?.subscribe) serveSubscriptions(server, upstreams, relay, proxied);
  if (capabilities.logging) serveLogLevel(server, ctx, relay, proxied);
  return server;
}

/** An upstream error keeps its code; an unreachable upstream says so (never "method not found"). */
function refuseUpstream(error: unknown): never {
  if (error instanceof ProtocolError) throw error;
  const { code, message } = describeFailure(error);
  throw new ProtocolError(code, message);
}

/** tools/list: the upstream's tools and the status check; tools/call: through the rules. */
function serveTools(
  server: Server,
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  relay: McpRelay,
  proxied: ProxyRequest,
) {
  const { caller, mcpSession, legacy } = proxied;
  server.setRequestHandler('tools/list', async (request, handler) => {
    const cursor = request.params?.cursor;
    const listed = await live(relay, mcpSession, handler.mcpReq, (signal) =>
      upstreams.use(caller.server, (client) => client.listTools(cursor ? { cursor } : undefined, { signal })),
    ).catch(refuseUpstream);
    await registerDiscoveredTools(ctx, caller, listed.tools as Record<string, unknown>[]);
    // Any call may wait for people: a 2025-era client may ask for a task for each (not the status check),
    // and a declared output also takes the held answer (held-output-schema.ts).
    const tools = listed.tools.map((tool) =>
      listedWithHeldAnswer(
        legacy ? { ...tool, execution: { ...tool.execution, taskSupport: 'optional' as const } } : tool,
      ),
    );
    return {
      tools: cursor ? tools : [...tools, checkStatusTool],
      ...(listed.nextCursor ? { nextCursor: listed.nextCursor } : {}),
    };
  });

  server.setRequestHandler('tools/call', async (request, handler) => {
    const call = handler.mcpReq;
    const stream: CallStream = {
      id: call.id,
      signal: call.signal,
      notify: (notification) => call.notify(notification as never),
      request: (message) => server.transport!.send(message, { relatedRequestId: call.id }),
      ...(!legacy && {
        round: {
          envelope: call.envelope,
          inputResponses: call.inputResponses,
          requestState: call.requestState(),
        },
      }),
    };
    const asked = { legacy, params: request.params, envelope: call.envelope };
    return (await toolCallAnswer(ctx, asked, stream, (on, onRunning) =>
      runToolCall(ctx, upstreams, relay, proxied, request.params, on, onRunning),
    )) as never;
  });
}

/** The upstream's resources, prompts and completions, each request passed to it as it came. */
function passThrough(
  server: Server,
  capabilities: ServerCapabilities,
  upstreams: UpstreamPool,
  relay: McpRelay,
  { caller, mcpSession }: ProxyRequest,
) {
  const forward = <T>(
    request: { id: unknown; signal: AbortSignal },
    work: (client: Client, signal: AbortSignal) => Promise<T>,
  ) =>
    live(relay, mcpSession, request, (signal) =>
      upstreams.use(caller.server, (client) => work(client, signal)),
    ).catch(refuseUpstream);
  if (capabilities.resources) {
    server.setRequestHandler('resources/list', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.listResources(r.params, { signal })),
    );
    server.setRequestHandler('resources/templates/list', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.listResourceTemplates(r.params, { signal })),
    );
    server.setRequestHandler('resources/read', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.readResource(r.params, { signal })),
    );
  }
  if (capabilities.prompts) {
    server.setRequestHandler('prompts/list', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.listPrompts(r.params, { signal })),
    );
    server.setRequestHandler('prompts/get', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.getPrompt(r.params, { signal })),
    );
  }
  if (capabilities.completions) {
    server.setRequestHandler('completion/complete', (r, h) =>
      forward(h.mcpReq, (c, signal) => c.complete(r.params, { signal })),
    );
  }
}

/**
 * Resource subscriptions of a 2025-era session. One upstream subscription per URI for this instance,
 * whoever asked; updates go to the sessions that asked, on their stream.
 */
function serveSubscriptions(
  server: Server,
  upstreams: UpstreamPool,
  relay: McpRelay,
  { caller, mcpSession }: ProxyRequest,
) {
  const upstream = caller.server;
  server.setRequestHandler('resources/subscribe', async ({ params }) => {
    if (mcpSession && relay.subscribe(upstream.id, mcpSession, params.uri)) {
      await upstreams
        .use(upstream, (c) => c.subscribeResource({ uri: params.uri }))
        .catch((error: unknown) => {
          relay.unsubscribe(upstream.id, mcpSession, params.uri);
          refuseUpstream(error);
        });
    }
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', async ({ params }) => {
    if (mcpSession && relay.unsubscribe(upstream.id, mcpSession, params.uri))
      await upstreams.use(upstream, (c) => c.unsubscribeResource({ uri: params.uri })).catch(refuseUpstream);
    return {};
  });
}

/**
 * logging/setLevel. The upstream connection is shared by every client, so its level stays where it
 * is; each session's level filters what its own stream receives.
 */
function serveLogLevel(server: Server, ctx: ServiceContext, relay: McpRelay, { mcpSession }: ProxyRequest) {
  server.setRequestHandler('logging/setLevel', async (request) => {
    const { level } = request.params;
    if (mcpSession && isLogLevel(level)) {
      await setMcpSessionLevel(ctx, mcpSession, level);
      relay.setLevel(mcpSession, level);
    }
    return {};
  });
}
