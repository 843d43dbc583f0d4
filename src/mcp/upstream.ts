/**
 * Connections to the registered upstream MCP servers: one client per server, shared by every call
 * of this instance, reconnected when the upstream restarts. Credentials are unsealed here only.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import {
  type CallToolRequestOptions,
  CLIENT_CAPABILITIES_META_KEY,
  Client,
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  type ClientCapabilities,
  ProtocolError,
  SdkErrorCode,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { type Backoff, backoffDelay } from '../domain/backoff.ts';
import { httpClient, type HttpClient } from '../net/http-client.ts';
import { checkTarget } from '../net/internal-addresses.ts';
import { callToolOverHttp, type UpstreamSession } from './upstream-call.ts';
import { inSpan, SpanKind } from '../telemetry/tracing.ts';
import type { CallRelay, ClientFeatureRequest } from '../services/proxy-call.ts';
import type { UpstreamNotification } from './relay.ts';
import type { Sealer } from '../services/secrets.ts';
import type { McpServer } from '../store/mcp-servers.ts';

/** Connecting (and the initialize handshake) to an upstream; a tools/call has its server's own limit. */
/** The lists a client is told may have changed when an upstream is back after an outage. */
const LIST_CHANGED = [
  'notifications/tools/list_changed',
  'notifications/resources/list_changed',
  'notifications/prompts/list_changed',
];
/** Retries of an unreachable upstream while sessions wait on it: 2 s, doubling, at most every 30 s. */
const RECONNECTS: Backoff = { firstMs: 2_000, longestMs: 30_000 };
/** A bound on an upstream's tool list, so a cursor that never ends cannot keep a call waiting. */
const MAX_LIST_PAGES = 100;
const CONNECT_TIMEOUT_MS = 10_000;

type Connection = {
  client: Client;
  url: string;
  headers: string;
  /** How a tools/call reaches a 2025-era upstream without the client (`upstream-call.ts`); null for 2026-era ones. */
  session: UpstreamSession | null;
};

/** What an upstream may send during a call that goes to the clients listening (as the SDK client's handlers pass it). */
const PASSED_ON = new Set([...LIST_CHANGED, 'notifications/message', 'notifications/resources/updated']);

/**
 * The MCP client features the proxy relays to the client of a call, and so declares to every
 * upstream: sampling, elicitation (form and URL modes) and roots. One connection serves every client
 * of a server, so a 2025-era upstream is told them once, at initialize; each request is then
 * relayed to the client of the call it belongs to, which answers (or refuses) it. A 2026-era
 * upstream is told, with each call, only what that call's client can be asked.
 */
export const CLIENT_FEATURES: ClientCapabilities = {
  sampling: {},
  elicitation: { form: {}, url: {} },
  roots: {},
};

const FEATURE_METHODS: ClientFeatureRequest['method'][] = [
  'sampling/createMessage',
  'elicitation/create',
  'roots/list',
];

/** The JSON-RPC error an upstream gets when no client can be asked (as from a client without the feature). */
const NO_CLIENT_CODE = -32601;

/** A tools/call in flight on a connection: what it relays back to its client. */
interface CallInFlight {
  relay: CallRelay;
}

/** The upstream could not be reached, or refused the connection: nothing ran there. */
export class UpstreamUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamUnavailable';
  }
}

/**
 * A tools/call that was sent and never answered: the server's call timeout passed without an answer
 * or progress (code -32001, the MCP request timeout), or the connection was lost mid-request
 * (-32000). It may or may not have run upstream, so it is never run again on its own.
 */
export class UpstreamNoAnswer extends Error {
  readonly code: number;
  readonly outcome = 'unknown' as const;
  constructor(code: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamNoAnswer';
    this.code = code;
  }
}

/** The JSON-RPC code of a request timeout (the MCP SDK's `ErrorCode.RequestTimeout`). */
export const REQUEST_TIMEOUT_CODE = -32001;

/**
 * The options of one tools/call upstream: the server's call timeout, restarted by every progress
 * notification. A progress handler is always given, so a progress token always goes upstream and an
 * upstream that reports progress can run past the timeout; the progress reaches the client only when
 * it asked for it (`relay.onProgress`).
 */
export function callToolOptions(server: McpServer, relay: CallRelay = {}): CallToolRequestOptions {
  return {
    timeout: server.callTimeoutSeconds * 1000,
    resetTimeoutOnProgress: true,
    onprogress: (progress) => relay.onProgress?.(progress),
    // Aborting (the client went away or cancelled) cancels the upstream request too.
    signal: relay.signal,
  };
}

/** A failed tools/call as what may have happened: unanswered ones become `UpstreamNoAnswer`. */
export function afterSending(error: unknown, server: McpServer, signal: AbortSignal | undefined): unknown {
  // Cancelled by the client, never sent, or answered (a JSON-RPC error): as it is.
  if (signal?.aborted || neverReached(error) || error instanceof UpstreamUnavailable) return error;
  const { code, data } = error as { code?: unknown; data?: { status?: unknown } };
  if (typeof code === 'number') return error;
  if (code === SdkErrorCode.RequestTimeout) {
    return new UpstreamNoAnswer(
      REQUEST_TIMEOUT_CODE,
      `Request timed out: the upstream MCP server did not answer within ${server.callTimeoutSeconds} seconds (its call timeout); the call may or may not have run there`,
      { cause: error },
    );
  }
  // An HTTP 4xx answer: the upstream refused the request, it did not run it.
  const status = typeof data?.status === 'number' ? data.status : 0;
  if (status >= 400 && status < 500) {
    return new UpstreamUnavailable('the upstream MCP server refused the request', { cause: error });
  }
  return new UpstreamNoAnswer(
    -32000,
    code === SdkErrorCode.InvalidResult
      ? "The upstream MCP server's answer could not be read; the call may or may not have run there"
      : 'The connection to the upstream MCP server was lost before it answered; the call may or may not have run there',
    { cause: error },
  );
}

/**
 * Errors that mean the request never ran upstream (nothing listening, the upstream forgot our
 * session after a restart), so trying again cannot run a call twice. A reset mid-request is not one.
 */
function neverReached(error: unknown): boolean {
  const { message, code, cause, data } = error as {
    message?: string;
    code?: unknown;
    cause?: { code?: string };
    data?: { status?: number };
  };
  // fetch puts the connection's code on `cause`, undici's `request` on the error itself.
  return (
    [cause?.code, code].some((found) => ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN'].includes(String(found))) ||
    /ECONNREFUSED|Session not found|No valid session ID/i.test(message ?? '') ||
    [400, 404].includes(data?.status ?? 0)
  );
}

export class UpstreamPool {
  private readonly connections = new Map<string, Promise<Connection>>();
  private readonly sealer: Sealer;
  private readonly allowPrivate: boolean;
  private readonly network: HttpClient;
  private listener: (serverId: string, notification: UpstreamNotification) => void = () => undefined;
  /** Servers whose last connection attempt failed, and the timer that tries again. */
  private readonly unreachable = new Map<
    string,
    { server: McpServer; retry: NodeJS.Timeout | null; retries: number }
  >();
  private closed = false;
  /** The resource URIs this instance's sessions are subscribed to on a server (the relay's). */
  subscriptionsOf: (serverId: string) => string[] = () => [];
  /** Whether sessions here wait on a server's notifications: only then is a lost upstream retried unasked. */
  wanted: (serverId: string) => boolean = () => false;
  /** The tools/calls in flight on each server's connection here (allowed and approved ones). */
  private readonly inFlight = new Map<string, Set<CallInFlight>>();
  /**
   * The call whose request is being sent or answered: what the upstream sends on that request's own
   * answer stream (or, 2026-era, in its `input_required` result) is handled within it.
   */
  private readonly calling = new AsyncLocalStorage<CallInFlight>();
  /** Tools/calls sent without the client so far: their request ids, which cannot be the client's. */
  private sent = 0;

  constructor(options: { sealer: Sealer; allowPrivate: boolean }) {
    this.sealer = options.sealer;
    this.allowPrivate = options.allowPrivate;
    this.network = httpClient({ allowPrivate: options.allowPrivate });
  }

  /** Runs `work` with the server's client; reconnects and tries once more when the request never got through. */
  use<T>(server: McpServer, work: (client: Client) => Promise<T>): Promise<T> {
    return this.withConnection(server, (connection) => work(connection.client));
  }

  private async withConnection<T>(
    server: McpServer,
    work: (connection: Connection) => Promise<T>,
  ): Promise<T> {
    try {
      return await work(await this.connection(server));
    } catch (error) {
      if (!neverReached(error)) throw error;
      this.drop(server.id);
      try {
        return await work(await this.connection(server));
      } catch (again) {
        if (neverReached(again)) {
          this.drop(server.id);
          throw new UpstreamUnavailable('the upstream MCP server cannot be reached', { cause: again });
        }
        throw again;
      }
    }
  }

  /**
   * One tools/call upstream (the `Upstreams` port of the proxy service), within the server's call
   * timeout. A call that was sent and not answered fails with `UpstreamNoAnswer`; one that never got
   * there with `UpstreamUnavailable`.
   */
  callTool(server: McpServer, name: string, args: Record<string, unknown>, relay: CallRelay = {}) {
    const attributes = { 'gen_ai.tool.name': name, 'mcp.server': server.name };
    const call = () => this.callToolUntraced(server, name, args, relay);
    return inSpan(`tools/call ${name}`, attributes, call, SpanKind.CLIENT);
  }

  private callToolUntraced(server: McpServer, name: string, args: Record<string, unknown>, relay: CallRelay) {
    return this.withConnection(server, async ({ client, session }) => {
      const call: CallInFlight = { relay };
      const calls = this.inFlight.get(server.id) ?? new Set<CallInFlight>();
      this.inFlight.set(server.id, calls);
      calls.add(call);
      try {
        return await this.calling.run(call, () =>
          session
            ? callToolOverHttp(
                this.network,
                session,
                `approvals-${(this.sent += 1)}`,
                { name, arguments: args, _meta: relay.meta },
                {
                  timeoutMs: server.callTimeoutSeconds * 1000,
                  signal: relay.signal,
                  onProgress: (progress) => relay.onProgress?.(progress),
                  onRequest: (request, signal) => this.fromUpstream(server.id, request, signal),
                  onNotification: (notification) => {
                    if (PASSED_ON.has(notification.method)) this.listener(server.id, notification);
                  },
                },
              )
            : // A 2026-era upstream reads the client's capabilities from each request: only what
              // this call's client can be asked.
              client.callTool(
                {
                  name,
                  arguments: args,
                  _meta: {
                    ...relay.meta,
                    [CLIENT_CAPABILITIES_META_KEY]: relay.ask ? CLIENT_FEATURES : {},
                  },
                },
                callToolOptions(server, relay),
              ),
        );
      } catch (error) {
        throw afterSending(error, server, relay.signal);
      } finally {
        calls.delete(call);
        if (calls.size === 0 && this.inFlight.get(server.id) === calls) this.inFlight.delete(server.id);
      }
    });
  }

  /**
   * A request of the upstream's to a client (sampling, elicitation, roots), relayed to the client of
   * the call it belongs to: the call on whose answer stream it came, else the one call in flight on
   * the server here. Refused (-32601, as a client without the feature answers) when there is no such
   * call, when several run and it names none, or when the call's client cannot be asked. roots/list
   * is answered with no roots instead: the upstream may ask it at any time.
   */
  private async fromUpstream(serverId: string, request: ClientFeatureRequest, signal: AbortSignal) {
    const related = this.calling.getStore();
    const calls = this.inFlight.get(serverId)?.size ?? 0;
    const call = related ?? (calls === 1 ? [...this.inFlight.get(serverId)!][0] : undefined);
    const roots = request.method === 'roots/list';
    const refuse = (why: string) => {
      if (roots) return { roots: [] };
      throw new ProtocolError(NO_CLIENT_CODE, `${request.method} cannot be relayed to a client: ${why}`);
    };
    if (!call) {
      return refuse(
        calls === 0
          ? 'the approvals proxy relays it only to the client of a tool call in progress, and none is'
          : 'several tool calls are in progress and the request is not related to one of them',
      );
    }
    const ask = call.relay.ask;
    if (!ask)
      return refuse("the tool call's client cannot be asked (an approved call, or a 2026-era client)");
    try {
      return await ask(request, signal);
    } catch (error) {
      const { code, message, data } = error as { code?: unknown; message?: unknown; data?: unknown };
      // A client without roots has none to give.
      if (roots && code === NO_CLIENT_CODE) return { roots: [] };
      if (typeof code === 'number') throw new ProtocolError(code, String(message ?? ''), data);
      throw error;
    }
  }

  /** Every tool the upstream lists now, following its pages (at most 100 of them). */
  listTools(server: McpServer, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    return this.use(server, async (client) => {
      const tools: Record<string, unknown>[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_LIST_PAGES; page++) {
        const listed = await client.listTools(cursor ? { cursor } : undefined, { signal });
        tools.push(...(listed.tools as Record<string, unknown>[]));
        cursor = listed.nextCursor;
        if (!cursor) break;
      }
      return tools;
    });
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
    return (await this.connection(server)).client;
  }

  private async connection(server: McpServer): Promise<Connection> {
    const existing = this.connections.get(server.id);
    if (existing) {
      const connection = await existing.catch(() => null);
      // Registration changed (URL, credentials): start over.
      if (connection && connection.url === server.url && connection.headers === server.headersSealed)
        return connection;
      this.drop(server.id);
    }
    // Outside any call's context: what the upstream sends on its own stream belongs to no call.
    const connecting = this.calling
      .exit(() => this.connect(server))
      .then(
        (connection) => {
          this.watchStream(server, connection);
          return this.connected(server, connection);
        },
        (error: unknown) => {
          this.lost(server);
          throw error;
        },
      );
    this.connections.set(server.id, connecting);
    connecting.catch(() => this.connections.delete(server.id));
    return connecting;
  }

  /**
   * A new connection: the resource subscriptions of this instance's sessions are renewed on it, and
   * after an outage every client hears that the lists may have changed (sessions opened meanwhile were
   * offered everything, and now learn what there is).
   */
  private async connected(server: McpServer, connection: Connection): Promise<Connection> {
    for (const uri of this.subscriptionsOf(server.id))
      await connection.client.subscribeResource({ uri }).catch(() => undefined);
    const outage = this.unreachable.get(server.id);
    if (outage) {
      this.unreachable.delete(server.id);
      if (outage.retry) clearTimeout(outage.retry);
      for (const method of LIST_CHANGED) this.listener(server.id, { method });
    }
    return connection;
  }

  /**
   * A 2025-era upstream's standing stream gone for good (the upstream forgot the session, 400 or 404,
   * or the SDK gave up reconnecting): nothing would arrive on this connection again, so it is dropped
   * and the server taken as lost — while sessions here wait on it, it is reconnected, and their
   * subscriptions renewed. Failed requests reach this handler too; `use` deals with those.
   */
  private watchStream(server: McpServer, connection: Connection): void {
    connection.client.onerror = (error: Error & { code?: unknown; data?: { status?: unknown } }) => {
      const forgotten =
        error.code === 'CLIENT_HTTP_FAILED_TO_OPEN_STREAM' && [400, 404].includes(Number(error.data?.status));
      if (!forgotten && !/^Maximum reconnection attempts/.test(error.message)) return;
      const entry = this.connections.get(server.id);
      // Only this connection, and once: a newer one may have replaced it (two errors can come at once).
      void entry
        ?.then((current) => {
          if (current !== connection || this.connections.get(server.id) !== entry) return;
          this.drop(server.id);
          this.lost(server);
        })
        .catch(() => undefined);
    };
  }

  /** The upstream cannot be reached: while sessions here wait on it, try again, less and less often. */
  private lost(server: McpServer): void {
    const outage = this.unreachable.get(server.id) ?? { server, retry: null, retries: 0 };
    this.unreachable.set(server.id, { ...outage, server });
    if (outage.retry || this.closed) return;
    const wait = backoffDelay(RECONNECTS, outage.retries + 1);
    const retry = setTimeout(() => {
      const current = this.unreachable.get(server.id);
      if (!current) return;
      current.retry = null;
      // Nobody waits for it here (any more): the next request will try.
      if (!this.wanted(server.id)) return;
      current.retries += 1;
      void this.client(current.server).catch(() => undefined);
    }, wait);
    retry.unref();
    this.unreachable.get(server.id)!.retry = retry;
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
        capabilities: CLIENT_FEATURES,
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
    // Sampling, elicitation and roots go to the client of the call they belong to.
    for (const method of FEATURE_METHODS) {
      // The SDK checks the client's answer to sampling and elicitation before it goes upstream.
      client.setRequestHandler(method, async (request, context) => {
        const params = request.params as Record<string, unknown> | undefined;
        return (await this.fromUpstream(server.id, { method, params }, context.mcpReq.signal)) as never;
      });
    }
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
    // A 2025-era session's calls go without the client, in the session it opened.
    const session: UpstreamSession | null =
      client.getProtocolEra?.() === 'modern'
        ? null
        : {
            url: server.url,
            headers: {
              ...headers,
              'mcp-protocol-version':
                client.getNegotiatedProtocolVersion() ?? DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
              ...(transport.sessionId ? { 'mcp-session-id': transport.sessionId } : {}),
            },
          };
    return { client, url: server.url, headers: server.headersSealed, session };
  }

  drop(serverId: string): void {
    const existing = this.connections.get(serverId);
    this.connections.delete(serverId);
    void existing?.then((connection) => connection.client.close()).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const { retry } of this.unreachable.values()) if (retry) clearTimeout(retry);
    for (const id of [...this.connections.keys()]) this.drop(id);
    await this.network.close().catch(() => undefined);
  }
}
