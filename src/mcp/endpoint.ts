/**
 * The MCP proxy endpoint `{base_url}/mcp/<slug>` (streamable HTTP). Authenticates with the workspace's
 * API key, keeps 2025-era sessions in the database (any instance can serve any request), and serves
 * every request with a fresh, stateless MCP server whose tools are the upstream's plus
 * `service_check_status`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createMcpHandler, isLegacyRequest, ProtocolError, Server } from '@modelcontextprotocol/server';
import { randomId } from '../domain/ids.ts';
import { limitAnonymous } from '../http/guard.ts';
import { sendError } from '../http/errors.ts';
import type { RateCounter } from '../http/rate-limiter.ts';
import { authenticate } from '../services/api-keys.ts';
import type { ServiceContext } from '../services/context.ts';
import {
  callThroughProxy,
  checkStatusTool,
  type ProxyCaller,
  ProxyRefusal,
  registerDiscoveredTools,
} from '../services/proxy-call.ts';
import {
  closeMcpSession,
  findMcpServerBySlug,
  findMcpSession,
  insertMcpSession,
} from '../store/mcp-servers.ts';
import type { UpstreamPool } from './upstream.ts';

const SESSION_HEADER = 'mcp-session-id';

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message }, id: null });
}

/**
 * A fresh server per request: it offers what this proxy serves of the upstream's capabilities
 * (requests, not subscriptions or change notifications, which a stateless proxy cannot relay).
 */
function serverFor(
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  caller: ProxyCaller,
  offered: Record<string, unknown>,
) {
  const capabilities = {
    tools: {},
    ...(offered.resources ? { resources: {} } : {}),
    ...(offered.prompts ? { prompts: {} } : {}),
    ...(offered.completions ? { completions: {} } : {}),
  };
  const server = new Server({ name: 'approvals-proxy', version: '1' }, { capabilities });
  const upstream = caller.server;
  const refuse = (error: unknown): never => {
    if (error instanceof ProxyRefusal) throw new ProtocolError(error.code, error.message, error.data);
    throw error;
  };

  server.setRequestHandler('tools/list', async (request) => {
    const cursor = request.params?.cursor;
    const listed = await upstreams
      .use(upstream, (client) => client.listTools(cursor ? { cursor } : undefined))
      .catch(refuse);
    await registerDiscoveredTools(ctx, caller, listed.tools as Record<string, unknown>[]);
    return {
      tools: cursor ? listed.tools : [...listed.tools, checkStatusTool],
      ...(listed.nextCursor ? { nextCursor: listed.nextCursor } : {}),
    };
  });

  server.setRequestHandler('tools/call', async (request, handler) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    // An allowed call runs while the client waits: its cancellation goes upstream, the upstream's
    // progress comes back on the same answer stream (when the client asked for progress).
    const progressToken = request.params._meta?.progressToken;
    const relay = {
      signal: handler.mcpReq.signal,
      onProgress:
        progressToken === undefined
          ? undefined
          : (progress: { progress: number; total?: number; message?: string }) =>
              void handler.mcpReq
                .notify({ method: 'notifications/progress', params: { progressToken, ...progress } })
                .catch(() => undefined),
    };
    return (await callThroughProxy(ctx, upstreams, caller, request.params.name, args, relay).catch(
      refuse,
    )) as never;
  });

  // Everything else an upstream offers passes through unchanged.
  if (capabilities.resources) {
    server.setRequestHandler('resources/list', (r) =>
      upstreams.use(upstream, (c) => c.listResources(r.params)),
    );
    server.setRequestHandler('resources/templates/list', (r) =>
      upstreams.use(upstream, (c) => c.listResourceTemplates(r.params)),
    );
    server.setRequestHandler('resources/read', (r) =>
      upstreams.use(upstream, (c) => c.readResource(r.params)),
    );
  }
  if (capabilities.prompts) {
    server.setRequestHandler('prompts/list', (r) => upstreams.use(upstream, (c) => c.listPrompts(r.params)));
    server.setRequestHandler('prompts/get', (r) => upstreams.use(upstream, (c) => c.getPrompt(r.params)));
  }
  if (capabilities.completions) {
    server.setRequestHandler('completion/complete', (r) =>
      upstreams.use(upstream, (c) => c.complete(r.params)),
    );
  }
  return server;
}

export function mcpRoutes(
  app: FastifyInstance,
  { ctx, counter, upstreams }: { ctx: ServiceContext; counter: RateCounter; upstreams: UpstreamPool },
) {
  const handler = createMcpHandler(
    async ({ authInfo }) => {
      const caller = authInfo!.extra!.caller as ProxyCaller;
      const capabilities = await upstreams.capabilities(caller.server).catch(() => ({}));
      return serverFor(ctx, upstreams, caller, capabilities as Record<string, unknown>);
    },
    { legacy: 'stateless' },
  );

  app.route<{ Params: { slug: string } }>({
    method: ['GET', 'POST', 'DELETE'],
    url: '/mcp/:slug',
    handler: async (request, reply) => {
      const token = request.headers.authorization?.match(/^Bearer +(\S+) *$/i)?.[1];
      const auth = await authenticate(ctx, token);
      if (!auth) {
        if (await limitAnonymous(counter, ctx, request, reply)) sendError(reply, 401, 'unauthorized');
        return reply;
      }
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

      const webRequest = toWebRequest(request, ctx.publicUrl);
      const body = request.body;
      const legacy = request.method !== 'POST' || (await isLegacyRequest(webRequest.clone(), body));
      const initialize =
        request.method === 'POST' && (body as { method?: string } | undefined)?.method === 'initialize';
      if (legacy && !initialize) {
        if (await sessionRefused(ctx, request, reply, server.id, auth.workspace.id)) return reply;
      }
      const response = await handler.fetch(webRequest, {
        parsedBody: body,
        authInfo: { token: 'proxy', clientId: auth.workspace.id, scopes: [], extra: { caller } },
      });
      reply.code(response.status);
      response.headers.forEach((value, name) => {
        if (name !== 'content-length') reply.header(name, value);
      });
      if (legacy && initialize && response.ok) {
        const sessionId = randomId('mcps_', 24);
        const version =
          (body as { params?: { protocolVersion?: string } }).params?.protocolVersion ?? '2025-03-26';
        await insertMcpSession(ctx.db, {
          id: sessionId,
          workspaceId: auth.workspace.id,
          mcpServerId: server.id,
          protocolVersion: version.slice(0, 20),
          createdAt: ctx.now(),
        });
        reply.header('Mcp-Session-Id', sessionId);
      }
      return reply.send(response.body ? Buffer.from(await response.arrayBuffer()) : null);
    },
  });
}

/**
 * 2025-era rules: after initialize every request names its session; unknown or ended sessions are
 * 404. Returns true when it answered (a Fastify reply is thenable, so it is not returned itself).
 */
async function sessionRefused(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  serverId: string,
  workspaceId: string,
): Promise<boolean> {
  const id = request.headers[SESSION_HEADER];
  if (typeof id !== 'string' || id === '') {
    if (request.method === 'GET')
      jsonRpcError(reply.header('Allow', 'POST, DELETE'), 405, -32000, 'Method not allowed');
    else jsonRpcError(reply, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    return true;
  }
  const session = await findMcpSession(ctx.db, id);
  if (
    !session ||
    session.closedAt !== null ||
    session.mcpServerId !== serverId ||
    session.workspaceId !== workspaceId
  ) {
    jsonRpcError(reply, 404, -32001, 'Session not found');
    return true;
  }
  if (request.method === 'DELETE') {
    await closeMcpSession(ctx.db, id, ctx.now());
    reply.code(204).send();
    return true;
  }
  if (request.method === 'GET') {
    // No server-initiated stream: every answer comes on the POST that asked.
    jsonRpcError(reply.header('Allow', 'POST, DELETE'), 405, -32000, 'Method not allowed');
    return true;
  }
  return false;
}

function toWebRequest(request: FastifyRequest, publicUrl: string): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || name === 'content-length') continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const init: RequestInit = { method: request.method, headers };
  if (request.method === 'POST' && request.body !== undefined) init.body = JSON.stringify(request.body);
  return new Request(new URL(request.url, publicUrl), init);
}
