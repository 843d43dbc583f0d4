/**
 * The MCP server the proxy shows a client, made fresh for each request: the upstream's tools plus
 * `service_check_status`, every tools/call through the rules, and the rest of what the upstream
 * offers (resources, prompts, completions, logging, list-change notifications) passed through.
 */
import { ProtocolError, Server, type ServerCapabilities } from '@modelcontextprotocol/server';
import type { ServiceContext } from '../services/context.ts';
import {
  callThroughProxy,
  checkStatusTool,
  type ProxyCaller,
  ProxyRefusal,
  registerDiscoveredTools,
} from '../services/proxy-call.ts';
import { setMcpSessionLogLevel } from '../store/mcp-servers.ts';
import { isLogLevel, type McpRelay } from './relay.ts';
import type { UpstreamPool } from './upstream.ts';

export interface ProxyRequest {
  caller: ProxyCaller;
  /** The 2025-era session the request belongs to; null for 2026-era requests and initialize. */
  mcpSession: string | null;
  /** The request is 2025-era (initialize included). */
  legacy: boolean;
}

/**
 * What the proxy offers: the upstream's capabilities it can serve, and tools always. Resource
 * subscriptions need a 2025-era session (updates come on its stream).
 */
function capabilitiesFrom(offered: ServerCapabilities, sessioned: boolean): ServerCapabilities {
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

export function proxyServer(
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  relay: McpRelay,
  { caller, mcpSession, legacy }: ProxyRequest,
  offered: ServerCapabilities,
): Server {
  const capabilities = capabilitiesFrom(offered, legacy);
  const server = new Server({ name: 'approvals-proxy', version: '1' }, { capabilities });
  const upstream = caller.server;
  const refuse = (error: unknown): never => {
    if (error instanceof ProxyRefusal) throw new ProtocolError(error.code, error.message, error.data);
    throw error;
  };
  /**
   * Runs a request that goes upstream with a signal that aborts when the client goes away or, in a
   * 2025-era session, cancels it by id in a later request: the upstream request is cancelled too.
   */
  const live = <T>(
    request: { id: unknown; signal: AbortSignal },
    work: (signal: AbortSignal) => Promise<T>,
  ) => {
    if (!mcpSession) return work(request.signal);
    const tracked = relay.track(mcpSession, request.id, request.signal);
    return work(tracked.signal).finally(tracked.done);
  };
  if (mcpSession) {
    server.setNotificationHandler('notifications/cancelled', (notification) =>
      relay.cancel(mcpSession, notification.params.requestId),
    );
  }

  server.setRequestHandler('tools/list', async (request, handler) => {
    const cursor = request.params?.cursor;
    const listed = await live(handler.mcpReq, (signal) =>
      upstreams.use(upstream, (client) => client.listTools(cursor ? { cursor } : undefined, { signal })),
    ).catch(refuse);
    await registerDiscoveredTools(ctx, caller, listed.tools as Record<string, unknown>[]);
    return {
      tools: cursor ? listed.tools : [...listed.tools, checkStatusTool],
      ...(listed.nextCursor ? { nextCursor: listed.nextCursor } : {}),
    };
  });

  server.setRequestHandler('tools/call', async (request, handler) => {
    const args = (request.params.arguments ?? {}) as Record<string, unknown>;
    // The upstream's progress comes back on the same answer stream (when the client asked for it).
    const progressToken = request.params._meta?.progressToken;
    const onProgress =
      progressToken === undefined
        ? undefined
        : (progress: { progress: number; total?: number; message?: string }) =>
            void handler.mcpReq
              .notify({ method: 'notifications/progress', params: { progressToken, ...progress } })
              .catch(() => undefined);
    const result = await live(handler.mcpReq, (signal) =>
      callThroughProxy(ctx, upstreams, caller, request.params.name, args, { signal, onProgress }),
    ).catch(refuse);
    return result as never;
  });

  if (capabilities.resources) {
    server.setRequestHandler('resources/list', (r, h) =>
      live(h.mcpReq, (signal) => upstreams.use(upstream, (c) => c.listResources(r.params, { signal }))),
    );
    server.setRequestHandler('resources/templates/list', (r, h) =>
      live(h.mcpReq, (signal) =>
        upstreams.use(upstream, (c) => c.listResourceTemplates(r.params, { signal })),
      ),
    );
    server.setRequestHandler('resources/read', (r, h) =>
      live(h.mcpReq, (signal) => upstreams.use(upstream, (c) => c.readResource(r.params, { signal }))),
    );
  }
  if (capabilities.resources?.subscribe) {
    // One upstream subscription per URI for this instance, whoever asked; updates go to the sessions
    // that asked, on their stream.
    server.setRequestHandler('resources/subscribe', async ({ params }) => {
      if (mcpSession && relay.subscribe(upstream.id, mcpSession, params.uri)) {
        await upstreams
          .use(upstream, (c) => c.subscribeResource({ uri: params.uri }))
          .catch((error: unknown) => {
            relay.unsubscribe(upstream.id, mcpSession, params.uri);
            throw error;
          });
      }
      return {};
    });
    server.setRequestHandler('resources/unsubscribe', async ({ params }) => {
      if (mcpSession && relay.unsubscribe(upstream.id, mcpSession, params.uri))
        await upstreams.use(upstream, (c) => c.unsubscribeResource({ uri: params.uri }));
      return {};
    });
  }
  if (capabilities.prompts) {
    server.setRequestHandler('prompts/list', (r, h) =>
      live(h.mcpReq, (signal) => upstreams.use(upstream, (c) => c.listPrompts(r.params, { signal }))),
    );
    server.setRequestHandler('prompts/get', (r, h) =>
      live(h.mcpReq, (signal) => upstreams.use(upstream, (c) => c.getPrompt(r.params, { signal }))),
    );
  }
  if (capabilities.completions) {
    server.setRequestHandler('completion/complete', (r, h) =>
      live(h.mcpReq, (signal) => upstreams.use(upstream, (c) => c.complete(r.params, { signal }))),
    );
  }
  if (capabilities.logging) {
    // The upstream connection is shared by every client, so its level stays where it is; each
    // session's level filters what its own stream receives.
    server.setRequestHandler('logging/setLevel', async (request) => {
      const { level } = request.params;
      if (mcpSession && isLogLevel(level)) {
        await setMcpSessionLogLevel(ctx.db, mcpSession, level);
        relay.setLevel(mcpSession, level);
      }
      return {};
    });
  }
  return server;
}
