/**
 * The MCP proxy endpoint `{base_url}/mcp/<slug>` (streamable HTTP). Authenticates with the workspace's
 * API key, keeps 2025-era sessions in the database (any instance can serve any request), serves
 * every request with a fresh MCP server (`proxy-server.ts`) but a session's plain tools/call, which
 * is answered directly (`tool-call.ts`), and streams answers as they come.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResponse,
  classifyInboundRequest,
  type McpServerFactory,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import { randomId } from '../domain/ids.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../domain/json-limits.ts';
import { ANONYMOUS_LIMIT, limitMcpCalls } from '../web/guard.ts';
import { HttpError } from '../web/errors.ts';
import { checkLimit, type RateCounter } from '../web/rate-limiter.ts';
import { authenticate, keyRequester } from '../services/api-keys.ts';
import { authenticateOAuth, MCP_SCOPE } from '../services/oauth.ts';
import { SLUG_PATTERN } from '../services/workspaces.ts';
import type { Environment } from '../domain/hold.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from '../services/context.ts';
import { describeSafely, isStorageUnavailable } from '../services/errors.ts';
import { mcpServerOf } from '../services/mcp-servers.ts';
import { endMcpSession, mcpSessionOf, startMcpSession } from '../services/mcp-sessions.ts';
import type { ProxyCaller } from '../services/proxy-call.ts';
import type { Requester } from '../services/submit-hold.ts';
import { noticeDecisions } from './decision-notices.ts';
import { type ProxyRequest, proxyServer, runToolCall } from './proxy-server.ts';
import type { McpRelay } from './relay.ts';
import { answerToolCall, isDirectToolCall } from './tool-call.ts';
import type { UpstreamPool } from './upstream.ts';

const SESSION_HEADER = 'mcp-session-id';
const MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH + 8;
/** The methods the endpoint serves; any other gets 405 (with a JSON-RPC body, as every error here). */
const SERVED = ['GET', 'POST', 'DELETE'];
/** As many messages as the MCP SDK takes in one batch. */
const MAX_BATCH = 100;

/**
 * Every error of the endpoint is a JSON-RPC error with `id: null`, in the MCP SDK's own codes and
 * HTTP statuses (decisions.md, amendments). Messages are fixed texts: never a value from the request.
 */
function jsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null });
}

/**
 * What Fastify refuses before the handler runs (the body's media type, size and JSON), and what the
 * handler throws, as JSON-RPC errors: for the MCP route only, the Core API keeps its own shapes.
 */
function mcpErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const code = (error as FastifyError).code;
  if ((error instanceof HttpError && error.code === 'invalid_json') || code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return jsonRpcError(reply, 400, -32700, 'Parse error: Invalid JSON');
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return jsonRpcError(reply, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return jsonRpcError(reply, 413, -32000, 'Payload Too Large: Request body must not exceed 1 MiB');
  if (isStorageUnavailable(error)) {
    request.log.warn(describeSafely(error.cause), 'storage unavailable');
    reply.header('Retry-After', '5');
    return jsonRpcError(reply, 503, -32000, 'Service Unavailable: storage is unreachable, retry later');
  }
  const status = (error as FastifyError).statusCode;
  if (status && status >= 400 && status < 500)
    return jsonRpcError(reply, 400, -32600, 'Invalid Request: the request cannot be read');
  const referenceId = randomUUID();
  request.log.error({ referenceId, ...describeSafely(error) }, 'internal error');
  return jsonRpcError(reply, 500, -32603, 'Internal error', { referenceId });
}

/**
 * A request without a valid key or token: 401 with a Bearer challenge, or 429 once its address has
 * guessed too often (the Core API's anonymous quota, 20 a minute per IP). At `/mcp/<server>` the
 * challenge is bare (decisions.md, MCP proxy); at `/mcp/<workspace>/<server>` it names the protected
 * resource metadata, where OAuth clients find the authorization server (RFC 9728).
 */
async function refuseUnauthenticated(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  challenge: string,
) {
  const limit = await checkLimit(counter, `ip:${request.ip}`, ANONYMOUS_LIMIT, ctx.now());
  reply.header('RateLimit-Limit', String(limit.limit));
  reply.header('RateLimit-Remaining', String(limit.remaining));
  reply.header('RateLimit-Reset', String(limit.resetSeconds));
  if (!limit.allowed) {
    reply.header('Retry-After', String(limit.resetSeconds));
    return jsonRpcError(reply, 429, -32000, 'Rate limited: too many requests without a valid API key');
  }
  reply.header('WWW-Authenticate', challenge);
  return jsonRpcError(reply, 401, -32000, 'Unauthorized: a valid API key is required');
}

/** Who is calling: a workspace's API key, or an OAuth grant for this one MCP server. */
interface Principal {
  workspace: Workspace;
  environment: Environment;
  /** Whose quota the tool calls count against. */
  quotaKey: string;
  /**
   * The agent identity when the credential fixes it (an OAuth grant); null: `X-Service-Agent`, or
   * a bound key's agent, or `key:<first 12 characters of the key>`.
   */
  agent: { id: string; label: string | null } | null;
  /** What the submissions check and record: the key's binding, or the member who allowed the client. */
  requester: Requester;
}

/**
 * The caller at `/mcp/<server>` (API keys) or `/mcp/<workspace>/<server>` (the workspace's API keys,
 * or an OAuth access token granted for exactly this MCP server).
 */
async function principalOf(
  ctx: ServiceContext,
  token: string | undefined,
  params: { workspace?: string; slug: string },
): Promise<Principal | null> {
  const auth = await authenticate(ctx, token);
  if (auth) {
    if (params.workspace !== undefined && auth.workspace.slug !== params.workspace) return null;
    return {
      workspace: auth.workspace,
      environment: auth.key.env,
      quotaKey: `key:${auth.key.id}`,
      agent: null,
      requester: keyRequester(auth.key),
    };
  }
  if (params.workspace === undefined || !token) return null;
  const grant = await authenticateOAuth(ctx, token, {
    workspaceSlug: params.workspace,
    serverSlug: params.slug,
  });
  if (!grant) return null;
  return {
    workspace: grant.workspace,
    environment: 'live',
    quotaKey: `grant:${grant.grant.id}`,
    agent: grant.agent,
    requester: { kind: 'oauth', grantId: grant.grant.id, member: grant.member },
  };
}

/** Whether a POSTed body is a JSON-RPC message, or a batch (1-100) of them. */
function isJsonRpcBody(body: unknown): boolean {
  const isMessage = (message: unknown) =>
    isJSONRPCRequest(message) || isJSONRPCNotification(message) || isJSONRPCResponse(message);
  if (!Array.isArray(body)) return isMessage(body);
  return body.length > 0 && body.length <= MAX_BATCH && body.every(isMessage);
}

/** How many tools/call requests a (valid) body carries: what the MCP rate limit counts. */
function toolCallsIn(body: unknown): number {
  const messages = (Array.isArray(body) ? body : [body]) as { method?: unknown; id?: unknown }[];
  return messages.filter((message) => message.method === 'tools/call' && message.id !== undefined).length;
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

  const handler = async (
    request: FastifyRequest<{ Params: { workspace?: string; slug: string } }>,
    reply: FastifyReply,
  ) => {
    if (!SERVED.includes(request.method))
      return jsonRpcError(reply.header('Allow', SERVED.join(', ')), 405, -32000, 'Method not allowed');
    const { workspace: workspaceSlug, slug } = request.params;
    if (workspaceSlug !== undefined && (!SLUG_PATTERN.test(workspaceSlug) || !SLUG_PATTERN.test(slug)))
      return jsonRpcError(reply, 404, -32000, 'Not found: no such MCP server');
    const token = request.headers.authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
    const auth = await principalOf(ctx, token, request.params);
    if (!auth) {
      const challenge =
        workspaceSlug === undefined
          ? 'Bearer'
          : `Bearer resource_metadata="${ctx.publicUrl}/.well-known/oauth-protected-resource/mcp/${workspaceSlug}/${slug}", scope="${MCP_SCOPE}"${token ? ', error="invalid_token"' : ''}`;
      return refuseUnauthenticated(counter, ctx, request, reply, challenge);
    }
    // Browsers may only come from our own origin (DNS rebinding, drive-by requests).
    const origin = request.headers.origin;
    if (origin && origin !== new URL(ctx.publicUrl).origin)
      return jsonRpcError(reply, 403, -32000, 'Forbidden origin');

    const body = request.body as { method?: string; params?: { protocolVersion?: string } } | undefined;
    if (request.method === 'POST') {
      if (body === undefined) return jsonRpcError(reply, 400, -32700, 'Parse error: the body is empty');
      // Arguments may nest 32 levels (the Core API's limit); a few more for the JSON-RPC envelope.
      if (jsonDepth(body, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH)
        return jsonRpcError(reply, 400, -32600, 'Invalid Request: the message is nested too deeply');
      if (!isJsonRpcBody(body))
        return jsonRpcError(reply, 400, -32600, 'Invalid Request: not a JSON-RPC message');
      // Tool calls count, per API key; connecting, listing, notifications and streams do not.
      if (!(await limitMcpCalls(counter, ctx, reply, auth, toolCallsIn(body))))
        return jsonRpcError(reply, 429, -32000, 'Rate limited: too many tool calls for this API key');
    }
    const server = await mcpServerOf(ctx, auth.workspace.id, slug);
    if (!server) return jsonRpcError(reply, 404, -32000, 'Not found: no such MCP server');

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
      mcpSession = session.id;
      if (request.method === 'DELETE') {
        await endMcpSession(ctx, session.id);
        for (const uri of relay.endSession(server.id, session.id))
          await upstreams.unsubscribe(server.id, uri);
        return reply.code(204).send();
      }
      if (request.method === 'GET') {
        if (!request.headers.accept?.includes('text/event-stream'))
          return jsonRpcError(reply, 406, -32000, 'Not Acceptable: Client must accept text/event-stream');
        // The session's standing stream: what the upstream sends on its own comes here.
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
    }
    if (!legacy && body?.method === 'subscriptions/listen') {
      relay.listening(gone, new Promise((resolve) => reply.raw.once('close', resolve)));
    }
    const agentHeader = request.headers['x-service-agent'];
    // A bound key's agent when no header names one; a header naming another is refused at the call.
    const boundAgent = auth.requester.kind === 'key' ? auth.requester.agentId : null;
    const agent =
      auth.agent ??
      (typeof agentHeader === 'string' && agentHeader.trim()
        ? { id: agentHeader.trim().slice(0, 200), label: null }
        : { id: boundAgent ?? `key:${token!.slice(0, 12)}`, label: null });
    const caller: ProxyCaller = {
      workspace: auth.workspace,
      environment: auth.environment,
      requester: auth.requester,
      server,
      agent,
      session: dedupFrame(request, mcpSession),
      mcpSession,
    };
    const proxied: ProxyRequest = { caller, mcpSession, legacy, log: request.log };
    if (mcpSession && isDirectToolCall(body, request.headers)) {
      const call = body;
      return answerToolCall(reply, call, gone.signal, (stream) =>
        runToolCall(ctx, upstreams, relay, proxied, call.params, stream),
      );
    }
    const response = await relay
      .handler(server.id, serve)
      .fetch(toWebRequest(request, ctx.publicUrl, gone.signal), {
        parsedBody: body,
        authInfo: {
          token: 'proxy',
          clientId: auth.workspace.id,
          scopes: [],
          extra: proxied as unknown as Record<string, unknown>,
        },
      });
    reply.code(response.status);
    response.headers.forEach((value, name) => {
      if (name !== 'content-length') reply.header(name, value);
    });
    if (legacy && initialize && response.ok) {
      const sessionId = randomId('mcps_', 24);
      await startMcpSession(ctx, {
        id: sessionId,
        workspaceId: auth.workspace.id,
        mcpServerId: server.id,
        protocolVersion: (body?.params?.protocolVersion ?? '2025-03-26').slice(0, 20),
      });
      reply.header('Mcp-Session-Id', sessionId);
    }
    // Streamed as it comes: progress reaches the client while the call runs.
    return reply.send(response.body);
  };
  // Every method reaches the handler, so that those it does not serve get a JSON-RPC 405 too.
  const method = [...SERVED, 'PUT', 'PATCH', 'OPTIONS'];
  app.route({ method, url: '/mcp/:slug', errorHandler: mcpErrorHandler, handler });
  app.route({ method, url: '/mcp/:workspace/:slug', errorHandler: mcpErrorHandler, handler });
}

/**
 * The frame in which identical calls are one operation (decisions.md, amendments: the MCP session by
 * default). `X-Service-Session` names one that outlives sessions (reconnects, several processes of one
 * job); otherwise a 2025-era request's `Mcp-Session-Id`. A 2026-era request has no session and
 * nothing else that tells one client from another (its clientInfo names the software, not the
 * process), so without the header it is a frame of its own: no dedup across requests.
 */
function dedupFrame(request: FastifyRequest, mcpSession: string | null): string {
  const header = request.headers['x-service-session'];
  if (typeof header === 'string' && header.trim()) return header.trim().slice(0, 200);
  return mcpSession ?? randomId('req_', 12);
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
