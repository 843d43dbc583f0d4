/**
 * Connections to the registered upstream MCP servers: one client per server, shared by every call
 * of this instance, reconnected when the upstream restarts. Credentials are unsealed here only.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { checkTarget, guardedFetch } from '../services/network-targets.ts';
import type { CallRelay } from '../services/proxy-call.ts';
import type { UpstreamNotification } from './relay.ts';
import type { Sealer } from '../services/secrets.ts';
import type { McpServer } from '../store/mcp-servers.ts';

export const CALL_TIMEOUT_MS = 60_000;
const CONNECT_TIMEOUT_MS = 10_000;

type Connection = { client: Client; url: string; headers: string };

/** The upstream could not be reached, or refused the connection: nothing ran there. */
export class UpstreamUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamUnavailable';
  }
}

/**
 * Errors that mean the request never ran upstream (nothing listening, the upstream forgot our
 * session after a restart), so trying again cannot run a call twice. A reset mid-request is not one.
 */
function neverReached(error: unknown): boolean {
  const { message, cause, data } = error as {
    message?: string;
    cause?: { code?: string };
    data?: { status?: number };
  };
  return (
    ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'].includes(cause?.code ?? '') ||
    /ECONNREFUSED|Session not found|No valid session ID/i.test(message ?? '') ||
    [400, 404].includes(data?.status ?? 0)
  );
}

export class UpstreamPool {
  private readonly connections = new Map<string, Promise<Connection>>();
  private readonly sealer: Sealer;
  private readonly allowPrivate: boolean;
  private readonly network: ReturnType<typeof guardedFetch>;
  private listener: (serverId: string, notification: UpstreamNotification) => void = () => undefined;

  constructor(options: { sealer: Sealer; allowPrivate: boolean }) {
    this.sealer = options.sealer;
    this.allowPrivate = options.allowPrivate;
    this.network = guardedFetch(options.allowPrivate);
  }

  /** Runs `work` with the server's client; reconnects and tries once more when the request never got through. */
  async use<T>(server: McpServer, work: (client: Client) => Promise<T>): Promise<T> {
    try {
      return await work(await this.client(server));
    } catch (error) {
      if (!neverReached(error)) throw error;
      this.drop(server.id);
      try {
        return await work(await this.client(server));
      } catch (again) {
        if (neverReached(again)) {
          this.drop(server.id);
          throw new UpstreamUnavailable('the upstream MCP server cannot be reached', { cause: again });
        }
        throw again;
      }
    }
  }

  /** One tools/call upstream (the `Upstreams` port of the proxy service). */
  callTool(server: McpServer, name: string, args: Record<string, unknown>, relay: CallRelay = {}) {
    return this.use(server, (client) =>
      client.callTool(
        { name, arguments: args },
        {
          timeout: CALL_TIMEOUT_MS,
          // Aborting (the client went away or cancelled) cancels the upstream request too.
          signal: relay.signal,
          ...(relay.onProgress ? { onprogress: relay.onProgress, resetTimeoutOnProgress: true } : {}),
        },
      ),
    );
  }

  /** Where what an upstream sends on its own (list changes, log messages) goes. */
  onNotification(listener: (serverId: string, notification: UpstreamNotification) => void): void {
    this.listener = listener;
  }

  /** Ends a resource subscription on this instance's connection to the server, if it is open. */
  async unsubscribe(serverId: string, uri: string): Promise<void> {
    const connection = await this.connections.get(serverId)?.catch(() => null);
    await connection?.client.unsubscribeResource({ uri }).catch(() => undefined);
  }

  async capabilities(server: McpServer) {
    return (await this.client(server)).getServerCapabilities() ?? {};
  }

  private async client(server: McpServer): Promise<Client> {
    const existing = this.connections.get(server.id);
    if (existing) {
      const connection = await existing.catch(() => null);
      // Registration changed (URL, credentials): start over.
      if (connection && connection.url === server.url && connection.headers === server.headersSealed)
        return connection.client;
      this.drop(server.id);
    }
    const connecting = this.connect(server);
    this.connections.set(server.id, connecting);
    connecting.catch(() => this.connections.delete(server.id));
    return (await connecting).client;
  }

  private async connect(server: McpServer): Promise<Connection> {
    await checkTarget(server.url, this.allowPrivate).catch((error: Error) => {
      throw new UpstreamUnavailable(`the upstream ${error.message}`);
    });
    const headers = JSON.parse(this.sealer.open(server.headersSealed)) as Record<string, string>;
    const relay = (method: string) => ({
      autoRefresh: false,
      debounceMs: 0,
      onChanged: () => this.listener(server.id, { method }),
    });
    // List changes arrive the way the upstream's protocol era sends them (on its GET stream, or on a
    // `subscriptions/listen` the client opens itself); log messages only from 2025-era upstreams.
    const client = new Client(
      { name: 'approvals-proxy', version: '1' },
      {
        // The newest revision the upstream speaks (a probe, then 2025-era initialize if it must).
        versionNegotiation: { mode: 'auto' },
        listChanged: {
          tools: relay('notifications/tools/list_changed'),
          prompts: relay('notifications/prompts/list_changed'),
          resources: relay('notifications/resources/list_changed'),
        },
      },
    );
    client.setNotificationHandler('notifications/message', (notification) =>
      this.listener(server.id, notification),
    );
    client.setNotificationHandler('notifications/resources/updated', (notification) =>
      this.listener(server.id, notification),
    );
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers },
      fetch: this.network.fetch,
    });
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
    } catch (error) {
      await client.close().catch(() => undefined);
      throw new UpstreamUnavailable('the upstream MCP server cannot be reached', { cause: error });
    }
    return { client, url: server.url, headers: server.headersSealed };
  }

  drop(serverId: string): void {
    const existing = this.connections.get(serverId);
    this.connections.delete(serverId);
    void existing?.then((connection) => connection.client.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    for (const id of [...this.connections.keys()]) this.drop(id);
    await this.network.close().catch(() => undefined);
  }
}
