/**
 * The MCP proxy endpoint `{base_url}/mcp/<slug>` (streamable HTTP). Authenticates with the workspace's
 * API key (`admission.ts`), keeps 2025-era sessions in the database (any instance can serve any
 * request), serves every request with a fresh MCP server (`proxy-server.ts`) but a session's plain
 * tools/call, which is answered directly (`tool-call.ts`), and streams answers as they come.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  classifyInboundRequest,
  type McpServerFactory,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import { randomId } from '../domain/ids.ts';
import type { RateCounter } from '../web/rate-limiter.ts';
import type { ServiceContext } from '../services/context.ts';
import { mcpServerOf } from '../services/mcp-servers.ts';
import { endMcpSession, mcpSessionOf, startMcpSession } from '../services/mcp-sessions.ts';
import type { ProxyCaller } from '../services/proxy-call.ts';
import {
  jsonRpcError,
  type McpParams,
  mcpErrorHandler,
  type Principal,
  principalOf,
  messageRefusal,
  refuseAddress,
  refuseUnauthenticated,
  SERVED,
} from './admission.ts';
import { noticeDecisions } from './decision-notices.ts';
import { type ProxyRequest, proxyServer, runToolCall } from './proxy-server.ts';
import type { McpRelay } from './relay.ts';
import { isTaskListen, listenToTasks } from './task-notices.ts';
import { wantsTask } from './tasks.ts';
import { answerToolCall, isDirectToolCall } from './tool-call.ts';
import type { UpstreamPool } from './upstream.ts';

const SESSION_HEADER = 'mcp-session-id';

/** A POSTed body as the endpoint reads it (admission.ts checked it is JSON-RPC); none for GET and DELETE. */
type McpBody =
  | { method?: string; params?: { protocolVersion?: string; task?: unknown; capabilities?: unknown } }
  | undefined;

/** What serving a request needs, made once for the routes. */
interface Endpoint {
  ctx: ServiceContext;
  upstreams: UpstreamPool;
  relay: McpRelay;
  /** The MCP server of one request, for the SDK's handler. */
  serve: McpServerFactory;
}

/** A request that passed admission, for the MCP server it names. */
interface Admitted {
  auth: Principal;
  /** The bearer token it came with. */
  token: string | undefined;
  server: ProxyCaller['server'];
  body: McpBody;
}

export function mcpRoutes(
  app: FastifyInstance,
  {
    ctx,
    counter,
    upstreams,
    relay,
  }: { ctx: ServiceContext; counter: RateCounter; upstreams: UpstreamPool; relay: McpRelay },
) {
  const serve: McpServerFactory = async ({ authInfo }) => {
    const proxied = authInfo!.extra as unknown as ProxyRequest;
    // Unknown while the upstream cannot be reached (null): the proxy then offers what it could.
    const offered = await upstreams.capabilities(proxied.caller.server).catch(() => null);
    return proxyServer(ctx, upstreams, relay, proxied, offered as ServerCapabilities);
  };
  connectRelay(app, ctx, upstreams, relay);
  const endpoint: Endpoint = { ctx, upstreams, relay, serve };

  const handler = async (request: FastifyRequest<{ Params: McpParams }>, reply: FastifyReply) => {
    const refused = refuseAddress(request, reply);
    if (refused) return refused;
    const token = request.headers.authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
    const auth = await principalOf(ctx, token, request.params);
    if (!auth) return refuseUnauthenticated(counter, ctx, request, reply, token);
    // Browsers may only come from our own origin (DNS rebinding, drive-by requests).
    const origin = request.headers.origin;
    if (origin && origin !== new URL(ctx.publicUrl).origin)
      return jsonRpcError(reply, 403, -32000, 'Forbidden origin');
    const body = request.body as McpBody;
    if (request.method === 'POST') {
      const refusal = await messageRefusal(ctx, counter, reply, auth, body);
      if (refusal) return jsonRpcError(reply, refusal.status, refusal.code, refusal.message);
    }
    const server = await mcpServerOf(ctx, auth.workspace.id, request.params.slug);
    if (!server) return jsonRpcError(reply, 404, -32000, 'Not found: no such MCP server');
    return serveAdmitted(endpoint, request, reply, { auth, token, server, body });
  };
  // Every method reaches the handler, so that those it does not serve get a JSON-RPC 405 too.
  const method = [...SERVED, 'PUT', 'PATCH', 'OPTIONS'];
  app.route({ method, url: '/mcp/:slug', errorHandler: mcpErrorHandler, handler });
  app.route({ method, url: '/mcp/:workspace/:slug', errorHandler: mcpErrorHandler, handler });
}

/**
 * The relay between the upstream pool and the sessions' streams, wired both ways, and the notices of
 * decisions to the sessions that wait for them: stopped when the app closes.
 */
function connectRelay(app: FastifyInstance, ctx: ServiceContext, upstreams: UpstreamPool, relay: McpRelay) {
  upstreams.onNotification((serverId, notification) => relay.deliver(serverId, notification));
  relay.onUnwanted = (serverId, uri) => void upstreams.unsubscribe(serverId, uri);
  upstreams.subscriptionsOf = (serverId) => relay.subscribedUris(serverId);
  upstreams.wanted = (serverId) => relay.listensTo(serverId);
  const stopNotices = noticeDecisions(ctx, relay, (error) =>
    app.log.warn({ err: error }, 'a decision could not be told to its MCP session'),
  );
  app.addHook('onClose', async () => stopNotices());
  // Standing streams never end by themselves: end them first, so closing can wait for the rest.
  app.addHook('preClose', () => relay.close());
}

/**
 * An admitted request: a 2025-era session's end (DELETE) or standing stream (GET), a session's plain
 * tools/call answered directly, or anything else through the SDK's handler and a fresh MCP server.
 */
async function serveAdmitted(
  endpoint: Endpoint,
  request: FastifyRequest,
  reply: FastifyReply,
  admitted: Admitted,
) {
  const { ctx, upstreams, relay } = endpoint;
  const { auth, server, body } = admitted;
  // Aborted when the client goes away before its answer is complete: the work stops, upstream too.
  const gone = new AbortController();
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) gone.abort();
  });
  const legacy = isLegacy(request, body);
  const initialize = request.method === 'POST' && body?.method === 'initialize';
  let mcpSession: string | null = null;
  if (legacy && !initialize) {
    const session = await sessionFor(ctx, request, reply, server.id, auth.workspace.id);
    if (!session) return reply;
    if (request.method === 'DELETE') return endSession(endpoint, reply, server.id, session.id);
    if (request.method === 'GET') return openStandingStream(endpoint, request, reply, server, session);
    mcpSession = session.id;
  }
  if (!legacy && body?.method === 'subscriptions/listen') {
    relay.listening(gone, new Promise((resolve) => reply.raw.once('close', resolve)));
  }
  const caller = callerOf(request, admitted, mcpSession);
  const proxied: ProxyRequest = { caller, mcpSession, legacy, log: request.log };
  if (!legacy && isTaskListen(body)) return listenToTasks(ctx, proxied, body, reply, gone.signal);
  if (mcpSession && isDirectToolCall(body, request.headers)) {
    const call = body;
    return answerToolCall(reply, call, gone.signal, (stream) =>
      runToolCall(ctx, upstreams, relay, proxied, call.params, stream),
    );
  }
  const opensSession = legacy && initialize;
  return answerThroughSdk(endpoint, request, reply, proxied, { body, opensSession, signal: gone.signal });
}

/** DELETE of a 2025-era session: it ends, and so do the upstream subscriptions only it wanted. */
async function endSession(endpoint: Endpoint, reply: FastifyReply, serverId: string, sessionId: string) {
  await endMcpSession(endpoint.ctx, sessionId);
  for (const uri of endpoint.relay.endSession(serverId, sessionId))
    await endpoint.upstreams.unsubscribe(serverId, uri);
  return reply.code(204).send();
}

/** GET of a 2025-era session: its standing stream, where what the upstream sends on its own comes. */
async function openStandingStream(
  { upstreams, relay }: Endpoint,
  request: FastifyRequest,
  reply: FastifyReply,
  server: ProxyCaller['server'],
  session: { id: string; logLevel: string | null },
) {
  if (!request.headers.accept?.includes('text/event-stream'))
    return jsonRpcError(reply, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
  await upstreams.capabilities(server).catch(() => undefined);
  reply.hijack();
  if (!relay.openStream(server.id, session.id, session.logLevel, reply.raw)) {
    reply.raw.writeHead(409, { 'Content-Type': 'application/json' });
    reply.raw.end(
      JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'Conflict: this session already has a stream open' },
        id: null,
      }),
    );
  }
  return reply;
}

/** Who calls, as the proxy's calls know it: the credential's agent, or the one the request names. */
function callerOf(
  request: FastifyRequest,
  { auth, token, server, body }: Admitted,
  mcpSession: string | null,
): ProxyCaller {
  const agentHeader = request.headers['x-service-agent'];
  // A bound key's agent when no header names one; a header naming another is refused at the call.
  const boundAgent = auth.requester.kind === 'key' ? auth.requester.agentId : null;
  const agent =
    auth.agent ??
    (typeof agentHeader === 'string' && agentHeader.trim()
      ? { id: agentHeader.trim().slice(0, 200), label: null }
      : { id: boundAgent ?? `key:${token!.slice(0, 12)}`, label: null });
  return {
    workspace: auth.workspace,
    environment: auth.environment,
    requester: auth.requester,
    server,
    agent,
    serviceSession: serviceSession(request),
    mcpSession,
    asTask:
      mcpSession !== null && body?.method === 'tools/call' && wantsTask(true, body.params ?? {}, undefined),
  };
}

/**
 * The request through the SDK's handler and a fresh MCP server, its answer streamed as it comes
 * (progress reaches the client while the call runs). An initialize that opens a 2025-era session
 * stores it and names it in `Mcp-Session-Id`.
 */
async function answerThroughSdk(
  { ctx, relay, serve }: Endpoint,
  request: FastifyRequest,
  reply: FastifyReply,
  proxied: ProxyRequest,
  { body, opensSession, signal }: { body: McpBody; opensSession: boolean; signal: AbortSignal },
) {
  const { workspace, server } = proxied.caller;
  const response = await relay.handler(server.id, serve).fetch(toWebRequest(request, ctx.publicUrl, signal), {
    parsedBody: body,
    authInfo: {
      token: 'proxy',
      clientId: workspace.id,
      scopes: [],
      extra: proxied as unknown as Record<string, unknown>,
    },
  });
  reply.code(response.status);
  response.headers.forEach((value, name) => {
    if (name !== 'content-length') reply.header(name, value);
  });
  if (opensSession && response.ok) {
    const sessionId = randomId('mcps_', 24);
    await startMcpSession(ctx, {
      id: sessionId,
      workspaceId: workspace.id,
      mcpServerId: server.id,
      protocolVersion: (body?.params?.protocolVersion ?? '2025-03-26').slice(0, 20),
      // The SDK's handler answered initialize, so they are the object its schema takes.
      clientCapabilities: (body?.params?.capabilities ?? null) as Record<string, unknown> | null,
    });
    reply.header('Mcp-Session-Id', sessionId);
  }
  return reply.send(response.body);
}

/**
 * The scope `X-Service-Session` narrows deduplication to (decisions.md, amendment "MCP deduplication"),
 * or null: the caller and its agent then frame identical calls, whatever session they come in.
 */
function serviceSession(request: FastifyRequest): string | null {
  const header = request.headers['x-service-session'];
  return typeof header === 'string' && header.trim() ? header.trim().slice(0, 200) : null;
}

/**
 * 2025-era rules: after initialize every request names its session; unknown or ended sessions are
 * 404, and a GET without one is 405. Returns the session, or null when it answered.
 */
async function sessionFor(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  serverId: string,
  workspaceId: string,
) {
  const id = request.headers[SESSION_HEADER];
  if (typeof id !== 'string' || id === '') {
    if (request.method === 'GET')
      jsonRpcError(reply.header('Allow', 'POST, DELETE'), 405, -32000, 'Method not allowed');
    else jsonRpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return null;
  }
  const session = await mcpSessionOf(ctx, id);
  if (
    !session ||
    session.closedAt !== null ||
    session.mcpServerId !== serverId ||
    session.workspaceId !== workspaceId
  ) {
    jsonRpcError(reply, 404, -32001, 'Session not found');
    return null;
  }
  return { id, logLevel: session.logLevel };
}

/**
 * Whether the SDK's handler would serve the request as 2025-era (`isLegacyRequest` given the parsed
 * body): its classification of the method, the body and the standard headers, read from Fastify's
 * request without building a web one, which only a request for the SDK needs.
 */
function isLegacy(request: FastifyRequest, body: unknown): boolean {
  if (request.method !== 'POST' || body === undefined) return true;
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return (
    classifyInboundRequest({
      httpMethod: 'POST',
      body,
      protocolVersionHeader: header('mcp-protocol-version'),
      mcpMethodHeader: header('mcp-method'),
      mcpNameHeader: header('mcp-name'),
    }).kind === 'legacy'
  );
}

/**
 * The request as the SDK's handler takes it, without its body: the handler is given the body
 * Fastify parsed (`parsedBody`) and never reads one, so it is not serialized again.
 */
function toWebRequest(request: FastifyRequest, publicUrl: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  return new Request(new URL(request.url, publicUrl), { method: request.method, headers, signal });
}
