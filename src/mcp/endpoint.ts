/**
 * The MCP proxy endpoint `{base_url}/mcp/<slug>` (streamable HTTP). Authenticates with the workspace's
 * API key, keeps 2025-era sessions in the database (any instance can serve any request), serves
 * every request with a fresh MCP server (`proxy-server.ts`), and streams answers as they come.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  isLegacyRequest,
  type McpServerFactory,
  type ServerCapabilities,
} from '@modelcontextprotocol/server';
import { randomId } from '../domain/ids.ts';
import { jsonDepth, MAX_JSON_DEPTH } from '../domain/json-limits.ts';
import { limitWorkspace, refuseUnauthenticated } from '../http/guard.ts';
import { sendError } from '../http/errors.ts';
import type { RateCounter } from '../http/rate-limiter.ts';
import { authenticate } from '../services/api-keys.ts';
import type { ServiceContext } from '../services/context.ts';
import type { ProxyCaller } from '../services/proxy-call.ts';
import {
  closeMcpSession,
  findMcpServerBySlug,
  findMcpSession,
  insertMcpSession,
} from '../store/mcp-servers.ts';
import { type ProxyRequest, proxyServer } from './proxy-server.ts';
import type { McpRelay } from './relay.ts';
import type { UpstreamPool } from './upstream.ts';

const SESSION_HEADER = 'mcp-session-id';
const MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH + 8;

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
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
    const offered = await upstreams.capabilities(proxied.caller.server).catch(() => ({}));
    return proxyServer(ctx, upstreams, relay, proxied, offered as ServerCapabilities);
  };
  upstreams.onNotification((serverId, notification) => relay.deliver(serverId, notification));
  relay.onUnwanted = (serverId, uri) => void upstreams.unsubscribe(serverId, uri);
  // Standing streams never end by themselves: end them first, so closing can wait for the rest.
  app.addHook('preClose', () => relay.close());

  app.route<{ Params: { slug: string } }>({
    method: ['GET', 'POST', 'DELETE'],
    url: '/mcp/:slug',
    handler: async (request, reply) => {
      const token = request.headers.authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
      const auth = await authenticate(ctx, token);
      if (!auth) {
        await refuseUnauthenticated(counter, ctx, request, reply);
        return reply;
      }
      if (!(await limitWorkspace(counter, ctx, reply, auth.workspace.id, 'mcp')))
        return jsonRpcError(reply, 429, -32000, 'Rate limited: too many requests for this workspace');
      // Browsers may only come from our own origin (DNS rebinding, drive-by requests).
      const origin = request.headers.origin;
      if (origin && origin !== new URL(ctx.publicUrl).origin)
        return jsonRpcError(reply, 403, -32000, 'Forbidden origin');
      const server = await findMcpServerBySlug(ctx.db, auth.workspace.id, request.params.slug);
      if (!server) return sendError(reply, 404, 'not_found');

      const agentHeader = request.headers['x-service-agent'];
      const agentId =
        typeof agentHeader === 'string' && agentHeader.trim()
          ? agentHeader.trim().slice(0, 200)
          : `key:${token!.slice(0, 12)}`;
      const sessionHeader = request.headers['x-service-session'];
      const caller: ProxyCaller = {
        workspace: auth.workspace,
        environment: auth.key.env,
        server,
        agent: { id: agentId, label: null },
        session:
          typeof sessionHeader === 'string' && sessionHeader.trim()
            ? sessionHeader.trim().slice(0, 200)
            : agentId,
      };

      // Aborted when the client goes away before its answer is complete: the work stops, upstream too.
      const gone = new AbortController();
      reply.raw.on('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      const body = request.body as { method?: string; params?: { protocolVersion?: string } } | undefined;
      // Arguments may nest 32 levels (the Core API's limit); a few more for the JSON-RPC envelope.
      if (jsonDepth(body, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH)
        return jsonRpcError(reply, 400, -32600, 'Invalid Request: the message is nested too deeply');
      const webRequest = toWebRequest(request, ctx.publicUrl, gone.signal);
      const legacy = request.method !== 'POST' || (await isLegacyRequest(webRequest.clone(), body));
      const initialize = request.method === 'POST' && body?.method === 'initialize';
      let mcpSession: string | null = null;
      if (legacy && !initialize) {
        const session = await sessionFor(ctx, request, reply, server.id, auth.workspace.id);
        if (!session) return reply;
        mcpSession = session.id;
        if (request.method === 'DELETE') {
          await closeMcpSession(ctx.db, session.id, ctx.now());
          for (const uri of relay.endSession(server.id, session.id))
            await upstreams.unsubscribe(server.id, uri);
          return reply.code(204).send();
        }
        if (request.method === 'GET') {
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
      const proxied: ProxyRequest = { caller, mcpSession, legacy };
      const response = await relay.handler(server.id, serve).fetch(webRequest, {
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
        await insertMcpSession(ctx.db, {
          id: sessionId,
          workspaceId: auth.workspace.id,
          mcpServerId: server.id,
          protocolVersion: (body?.params?.protocolVersion ?? '2025-03-26').slice(0, 20),
          createdAt: ctx.now(),
        });
        reply.header('Mcp-Session-Id', sessionId);
      }
      // Streamed as it comes: progress reaches the client while the call runs.
      return reply.send(response.body);
    },
  });
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
  const session = await findMcpSession(ctx.db, id);
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

function toWebRequest(request: FastifyRequest, publicUrl: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const init: RequestInit = { method: request.method, headers, signal };
  if (request.method === 'POST' && request.body !== undefined) init.body = JSON.stringify(request.body);
  return new Request(new URL(request.url, publicUrl), init);
}
