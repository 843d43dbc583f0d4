/**
 * What the MCP proxy carries outside one request and its answer, in this instance: a client's
 * `notifications/cancelled` sent on its own (it aborts the request it names, and so the upstream
 * call), and the upstream's own notifications (list changes, log messages) relayed to the clients
 * listening: 2025-era sessions on their GET stream, 2026-era clients on `subscriptions/listen`
 * (the SDK's listen router, fed by one event bus per registered server).
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
  response: ServerResponse;
  /** Log messages below this level are not sent; null sends all. */
  level: string | null;
  end(): void;
}

export class McpRelay {
  private readonly factory: McpServerFactory;
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

  constructor(factory: McpServerFactory) {
    this.factory = factory;
  }

  handler(serverId: string): McpHttpHandler {
    let handler = this.handlers.get(serverId);
    if (!handler) {
      handler = createMcpHandler(this.factory, { legacy: 'stateless' });
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

  cancel(sessionId: string, requestId: unknown): void {
    this.inflight
      .get(`${sessionId} ${JSON.stringify(requestId)}`)
      ?.abort(new Error('cancelled by the client'));
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
      response,
      level,
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

  /** logging/setLevel of a session whose stream is on this instance. */
  setLevel(sessionId: string, level: string): void {
    for (const forServer of this.streams.values()) {
      const stream = forServer.get(sessionId);
      if (stream) stream.level = level;
    }
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

  /** resources/unsubscribe: true when nobody here wants the URI any more (tell the upstream). */
  unsubscribe(serverId: string, sessionId: string, uri: string): boolean {
    const byUri = this.subscribers.get(serverId);
    const sessions = byUri?.get(uri);
    if (!sessions?.delete(sessionId)) return false;
    if (sessions.size > 0) return false;
    byUri!.delete(uri);
    return true;
  }

  /** The session ended (DELETE): its stream ends; returns the URIs nobody here wants any more. */
  endSession(serverId: string, sessionId: string): string[] {
    this.streams.get(serverId)?.get(sessionId)?.end();
    const byUri = this.subscribers.get(serverId);
    return [...(byUri?.keys() ?? [])].filter((uri) => this.unsubscribe(serverId, sessionId, uri));
  }

  /** A notification the upstream sent on its own, passed to every client of that server listening. */
  deliver(serverId: string, notification: UpstreamNotification): void {
    const change = LIST_CHANGES[notification.method];
    const notify = this.handlers.get(serverId)?.notify;
    if (notify && change) notify[change]();
    const forServer = this.streams.get(serverId);
    if (!forServer) return;
    const isLog = notification.method === 'notifications/message';
    const subscribed =
      notification.method === 'notifications/resources/updated'
        ? (this.subscribers.get(serverId)?.get(String(notification.params?.uri)) ?? new Set<string>())
        : undefined;
    const frame = `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...notification })}\n\n`;
    for (const stream of forServer.values()) {
      if (isLog && stream.level && !atLeast(notification.params?.level, stream.level)) continue;
      if (subscribed && !subscribed.has(stream.sessionId)) continue;
      stream.response.write(frame);
    }
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
