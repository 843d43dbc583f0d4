/**
 * What the MCP proxy carries outside one request and its answer: a client's `notifications/cancelled`
 * sent on its own (it aborts the request it names, and so the upstream call), and the upstream's own
 * notifications (list changes, log messages, resource updates) relayed to the clients listening:
 * 2025-era sessions on their GET stream, 2026-era clients on `subscriptions/listen` (the SDK's listen
 * router, fed by one event bus per registered server).
 *
 * A session's requests may land on any instance. What one instance cannot settle alone goes to the
 * others as a `RelayMessage` (`broadcast`, over PostgreSQL NOTIFY): a cancellation of a request
 * running elsewhere, a session's new log level, a resource update for a session whose stream is
 * elsewhere, and the end of a session.
 */
import type { ServerResponse } from 'node:http';
import {
  createMcpHandler,
  type McpHttpHandler,
  type McpServerFactory,
  type ServerNotifier,
} from '@modelcontextprotocol/server';

export interface UpstreamNotification {
  method: string;
  params?: Record<string, unknown>;
}

/** A client's JSON-RPC answer to a request of the proxy's: a result or an error. */
export interface ClientAnswer {
  id: unknown;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: unknown };
}

export type RelayMessage =
  | { type: 'cancel'; session: string; request: unknown }
  | { type: 'level'; session: string; level: string }
  | { type: 'update'; server: string; session: string; notification: UpstreamNotification }
  | { type: 'unsubscribe'; server: string; session: string; uri: string }
  | { type: 'end'; server: string; session: string };

/** Log levels from least to most severe (RFC 5424 names, as MCP uses them). */
const SEVERITY = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
export const isLogLevel = (level: unknown): level is string =>
  typeof level === 'string' && SEVERITY.includes(level);

const LIST_CHANGES: Record<string, Exclude<keyof ServerNotifier, 'resourceUpdated'>> = {
  'notifications/tools/list_changed': 'toolsChanged',
  'notifications/prompts/list_changed': 'promptsChanged',
  'notifications/resources/list_changed': 'resourcesChanged',
};

const HEARTBEAT_MS = 15_000;

interface StandingStream {
  sessionId: string;
  /** Log messages below this level are not sent; null sends all. */
  level: string | null;
  send(notification: UpstreamNotification): void;
  end(): void;
}

export class McpRelay {
  /** One handler per registered server, so a `subscriptions/listen` hears only its own server. */
  private readonly handlers = new Map<string, McpHttpHandler>();
  /** `<session> <request id>` of 2025-era requests in flight that a client may cancel. */
  private readonly inflight = new Map<string, AbortController>();
  /** Per server, the GET stream of each 2025-era session (one per session, as the transport asks). */
  private readonly streams = new Map<string, Map<string, StandingStream>>();
  /** Per server, per resource URI, the 2025-era sessions subscribed to its updates here. */
  private readonly subscribers = new Map<string, Map<string, Set<string>>>();
  /** 2026-era listen requests, which never end by themselves, and when each has ended. */
  private readonly listens = new Map<AbortController, Promise<void>>();
  /**
   * Requests the proxy sent to a 2025-era session's client (sampling, elicitation, roots: the
   * upstream's, during a call) that wait for the client's answer, by `<session> <request id>`.
   */
  private readonly asked = new Map<string, (answer: ClientAnswer) => void>();

  /** Set when instances share a database: tells the others what this one cannot settle alone. */
  broadcast: ((message: RelayMessage) => void) | null = null;
  /** Upstream subscriptions this instance no longer needs after a session ended elsewhere. */
  onUnwanted: (serverId: string, uri: string) => void = () => undefined;

  handler(serverId: string, factory: McpServerFactory): McpHttpHandler {
    let handler = this.handlers.get(serverId);
    if (!handler) {
      handler = createMcpHandler(factory, { legacy: 'stateless' });
      this.handlers.set(serverId, handler);
    }
    return handler;
  }

  /**
   * A signal for one request of a 2025-era session: aborted when the client goes away (`signal`) or
   * cancels the request by its id. Call `done` when the request ends.
   */
  track(sessionId: string, requestId: unknown, signal: AbortSignal) {
    const key = `${sessionId} ${JSON.stringify(requestId)}`;
    const controller = new AbortController();
    this.inflight.set(key, controller);
    return {
      signal: AbortSignal.any([signal, controller.signal]),
      done: () => {
        if (this.inflight.get(key) === controller) this.inflight.delete(key);
      },
    };
  }

  /** Cancels the session's request here, or on the instance running it. */
  cancel(sessionId: string, requestId: unknown): void {
    if (!this.cancelHere(sessionId, requestId))
      this.broadcast?.({ type: 'cancel', session: sessionId, request: requestId });
  }

  private cancelHere(sessionId: string, requestId: unknown): boolean {
    const controller = this.inflight.get(`${sessionId} ${JSON.stringify(requestId)}`);
    controller?.abort(new Error('cancelled by the client'));
    return controller !== undefined;
  }

  /** A message from another instance. */
  receive(message: RelayMessage): void {
    if (message.type === 'cancel') this.cancelHere(message.session, message.request);
    else if (message.type === 'level') this.setLevelHere(message.session, message.level);
    else if (message.type === 'update')
      this.streams.get(message.server)?.get(message.session)?.send(message.notification);
    else if (message.type === 'unsubscribe') {
      if (this.unsubscribeHere(message.server, message.session, message.uri))
        this.onUnwanted(message.server, message.uri);
    } else if (message.type === 'end')
      for (const uri of this.endSessionHere(message.server, message.session))
        this.onUnwanted(message.server, uri);
    // Anything else comes from a newer version during a rolling upgrade: ignored.
  }

  /** Keeps a 2026-era listen request's controller, so stopping the instance ends the stream. */
  listening(controller: AbortController, ended: Promise<void>): void {
    this.listens.set(controller, ended);
    void ended.then(() => this.listens.delete(controller));
  }

  /** Opens the session's GET stream; false when it already has one (the caller answers 409). */
  openStream(serverId: string, sessionId: string, level: string | null, response: ServerResponse): boolean {
    const forServer = this.streams.get(serverId) ?? new Map<string, StandingStream>();
    if (forServer.has(sessionId)) return false;
    this.streams.set(serverId, forServer);
    response.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache, no-store',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    response.flushHeaders();
    const heartbeat = setInterval(() => response.write(': ping\n\n'), HEARTBEAT_MS);
    const stream: StandingStream = {
      sessionId,
      level,
      send: (notification) =>
        response.write(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...notification })}\n\n`),
      end: () => {
        clearInterval(heartbeat);
        if (forServer.get(sessionId) === stream) forServer.delete(sessionId);
        if (forServer.size === 0 && this.streams.get(serverId) === forServer) this.streams.delete(serverId);
        response.end();
      },
    };
    forServer.set(sessionId, stream);
    response.on('close', stream.end);
    return true;
  }

  /** logging/setLevel: the session's stream, here or on another instance, filters at the new level. */
  setLevel(sessionId: string, level: string): void {
    this.setLevelHere(sessionId, level);
    this.broadcast?.({ type: 'level', session: sessionId, level });
  }

  private setLevelHere(sessionId: string, level: string): void {
    for (const forServer of this.streams.values()) {
      const stream = forServer.get(sessionId);
      if (stream) stream.level = level;
    }
  }

  /** Whether any 2025-era session has its stream open here. */
  get hasStreams(): boolean {
    return this.streams.size > 0;
  }

  /** Sends a notification on one session's stream, if it is open here; true when sent. */
  notifySession(serverId: string, sessionId: string, notification: UpstreamNotification): boolean {
    const stream = this.streams.get(serverId)?.get(sessionId);
    stream?.send(notification);
    return stream !== undefined;
  }

  /** The resource URIs sessions here are subscribed to on the server (renewed on a new connection). */
  subscribedUris(serverId: string): string[] {
    return [...(this.subscribers.get(serverId)?.keys() ?? [])];
  }

  /** Whether a session here waits on the server's notifications (a GET stream or a subscription). */
  listensTo(serverId: string): boolean {
    return (this.streams.get(serverId)?.size ?? 0) > 0 || (this.subscribers.get(serverId)?.size ?? 0) > 0;
  }

  /** resources/subscribe: true when the session is the first here, so the upstream must be asked. */
  subscribe(serverId: string, sessionId: string, uri: string): boolean {
    const byUri = this.subscribers.get(serverId) ?? new Map<string, Set<string>>();
    this.subscribers.set(serverId, byUri);
    const sessions = byUri.get(uri) ?? new Set<string>();
    byUri.set(uri, sessions);
    sessions.add(sessionId);
    return sessions.size === 1;
  }

  /**
   * resources/unsubscribe: true when nobody here wants the URI any more (tell the upstream). A
   * subscription made on another instance is ended there.
   */
  unsubscribe(serverId: string, sessionId: string, uri: string): boolean {
    const unwanted = this.unsubscribeHere(serverId, sessionId, uri);
    if (unwanted === undefined)
      this.broadcast?.({ type: 'unsubscribe', server: serverId, session: sessionId, uri });
    return unwanted ?? false;
  }

  /** undefined when the session has no subscription to the URI here. */
  private unsubscribeHere(serverId: string, sessionId: string, uri: string): boolean | undefined {
    const byUri = this.subscribers.get(serverId);
    const sessions = byUri?.get(uri);
    if (!sessions?.delete(sessionId)) return undefined;
    if (sessions.size > 0) return false;
    byUri!.delete(uri);
    return true;
  }

  /**
   * The session ended (DELETE): its stream ends, here or elsewhere; returns the URIs nobody here
   * wants any more.
   */
  endSession(serverId: string, sessionId: string): string[] {
    this.broadcast?.({ type: 'end', server: serverId, session: sessionId });
    return this.endSessionHere(serverId, sessionId);
  }

  private endSessionHere(serverId: string, sessionId: string): string[] {
    this.streams.get(serverId)?.get(sessionId)?.end();
    const byUri = this.subscribers.get(serverId);
    return [...(byUri?.keys() ?? [])].filter((uri) => this.unsubscribeHere(serverId, sessionId, uri));
  }

  /** A notification the upstream sent on its own, passed to every client of that server listening. */
  deliver(serverId: string, notification: UpstreamNotification): void {
    const change = LIST_CHANGES[notification.method];
    const notify = this.handlers.get(serverId)?.notify;
    if (notify && change) notify[change]();
    const forServer = this.streams.get(serverId);
    if (notification.method === 'notifications/resources/updated') {
      // Subscribed here; the session's stream may be on another instance.
      const subscribed = this.subscribers.get(serverId)?.get(String(notification.params?.uri)) ?? [];
      for (const session of subscribed) {
        const stream = forServer?.get(session);
        if (stream) stream.send(notification);
        else this.broadcast?.({ type: 'update', server: serverId, session, notification });
      }
      return;
    }
    const isLog = notification.method === 'notifications/message';
    for (const stream of forServer?.values() ?? []) {
      if (isLog && stream.level && !atLeast(notification.params?.level, stream.level)) continue;
      stream.send(notification);
    }
  }

  /**
   * A request the proxy sends to a 2025-era session's client: its answer comes back in a later POST
   * of the session (`answer`), which must reach this instance. `settle` is called once, with the
   * answer; call `done` when the request ends either way.
   */
  expectAnswer(sessionId: string, requestId: string, settle: (answer: ClientAnswer) => void) {
    const key = `${sessionId} ${JSON.stringify(requestId)}`;
    this.asked.set(key, (answer) => {
      this.asked.delete(key);
      settle(answer);
    });
    return { done: () => this.asked.delete(key) };
  }

  /** A response a session's client posted: true when it answers a request of the proxy's here. */
  answer(sessionId: string, message: ClientAnswer): boolean {
    const settle = this.asked.get(`${sessionId} ${JSON.stringify(message.id)}`);
    settle?.(message);
    return settle !== undefined;
  }

  /**
   * Ends every standing stream (the instance is stopping; clients reconnect elsewhere). Resolves
   * once they are written out, so their connections are idle and can be closed at once.
   */
  async close(): Promise<void> {
    for (const forServer of [...this.streams.values()])
      for (const stream of [...forServer.values()]) stream.end();
    const ended = [...this.listens.values()];
    for (const controller of this.listens.keys()) controller.abort();
    await Promise.all(ended);
  }
}

function atLeast(level: unknown, threshold: string): boolean {
  return SEVERITY.indexOf(String(level)) >= SEVERITY.indexOf(threshold);
}
