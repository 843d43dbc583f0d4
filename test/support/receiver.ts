/**
 * A real webhook receiver for tests: an HTTP server on a loopback port whose answer to each request
 * a test scripts (status, headers, delay, redirect, Retry-After, huge or endless bodies), and which
 * records every request's raw body and headers. It can be stopped and started again on its port.
 */
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';

export interface Received {
  method: string;
  /** Path and query. */
  url: string;
  headers: http.IncomingHttpHeaders;
  /** The body exactly as it arrived (for signatures). */
  body: string;
  /** `Date.now()` when the whole body had arrived. */
  at: number;
}

export interface Reply {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Wait this long before answering (the client may give up first). */
  delayMs?: number;
  /** Answer 3xx with `Location` (status default 302). */
  redirectTo?: string;
  /** Send `Retry-After` with this value (seconds, or an HTTP date). */
  retryAfter?: string | number;
  /** Stream this many bytes of body (up to `hugeBody` bytes; stops when the client goes). */
  hugeBody?: number;
  /** Never answer: keep the connection open until the client gives up or the receiver closes. */
  hang?: boolean;
}

/** Picks the reply for a request; `index` counts every request received, from 0. */
export type Script = (request: Received, index: number) => Reply;

export interface Receiver {
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  /** `http://127.0.0.1:<port>/hook` */
  url: string;
  /** Every request received, oldest first. */
  requests: Received[];
  /** Requests whose header `x-service-delivery` is `id`. */
  deliveriesOf(id: string): Received[];
  /** Replaces how requests are answered from now on. */
  script(script: Script | Reply): void;
  /** The next replies, in order, before the script applies again. */
  queue(...replies: Reply[]): void;
  /** Bytes of huge bodies written before the client went away, per request index. */
  hugeBytesWritten: Map<number, number>;
  /** Resolves once every huge body begun so far has ended (written out, or the client went away). */
  hugeBodiesEnded(): Promise<void>;
  /** Resolves once `count` requests (matching `filter`) have arrived. */
  waitFor(
    count: number,
    options?: { timeoutMs?: number; filter?: (r: Received) => boolean },
  ): Promise<Received[]>;
  /** Stops listening (and drops open connections); the port stays ours to start again. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

const CHUNK = Buffer.alloc(64 * 1024, 'x');

/** Evidence checkpoints, which a workspace's endpoint also gets once a minute, besides hold events. */
export const isCheckpointEvent = (request: Received) =>
  request.headers['x-service-event'] === 'evidence.checkpoint';

/**
 * A receiver on `port` (default: a free one). With `listening: false` it is created down. Requests
 * that `ignore` matches are acknowledged at once and neither recorded nor scripted.
 */
export async function startReceiver(
  options: {
    port?: number;
    script?: Script | Reply;
    listening?: boolean;
    ignore?: (request: Received) => boolean;
  } = {},
): Promise<Receiver> {
  const requests: Received[] = [];
  const queued: Reply[] = [];
  let script: Script = typeof options.script === 'function' ? options.script : () => ({});
  if (options.script && typeof options.script !== 'function') {
    const fixed = options.script;
    script = () => fixed;
  }
  const timers = new Set<NodeJS.Timeout>();
  const hugeBytesWritten = new Map<number, number>();
  const hugeBodies: Promise<unknown>[] = [];
  const waiters = new Set<() => void>();

  const answer = (response: http.ServerResponse, reply: Reply, index: number) => {
    if (response.destroyed) return;
    if (reply.hang) return;
    const headers: Record<string, string> = { ...reply.headers };
    let status = reply.status ?? 200;
    if (reply.redirectTo) {
      status = reply.status ?? 302;
      headers.Location = reply.redirectTo;
    }
    if (reply.retryAfter !== undefined) headers['Retry-After'] = String(reply.retryAfter);
    if (reply.hugeBody) {
      response.writeHead(status, { 'Content-Type': 'application/octet-stream', ...headers });
      let written = 0;
      hugeBytesWritten.set(index, 0);
      hugeBodies.push(once(response, 'close').catch(() => undefined));
      const pump = () => {
        while (written < reply.hugeBody! && !response.destroyed) {
          written += CHUNK.length;
          hugeBytesWritten.set(index, written);
          if (!response.write(CHUNK)) return void response.once('drain', pump);
        }
        if (!response.destroyed) response.end();
      };
      response.on('error', () => {});
      pump();
      return;
    }
    response.writeHead(status, { 'Content-Type': 'text/plain', ...headers });
    response.end(reply.body ?? '');
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const received: Received = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      if (options.ignore?.(received)) return void response.end();
      const index = requests.length;
      requests.push(received);
      for (const wake of [...waiters]) wake();
      let reply: Reply;
      try {
        reply = queued.shift() ?? script(received, index);
      } catch {
        reply = { status: 500 };
      }
      response.on('error', () => {});
      if (reply.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer(response, reply, index);
        }, reply.delayMs);
        timers.add(timer);
      } else {
        answer(response, reply, index);
      }
    });
    request.on('error', () => {});
  });
  server.on('clientError', (_error, socket: net.Socket) => socket.destroy());

  let port = options.port ?? 0;
  let listening = false;
  const start = async () => {
    if (listening) return;
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as net.AddressInfo).port;
    listening = true;
  };
  const stop = async () => {
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await closed;
  };
  if (options.listening !== false || options.port === undefined) await start();

  const receiver: Receiver = {
    get port() {
      return port;
    },
    get origin() {
      return `http://127.0.0.1:${port}`;
    },
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    requests,
    hugeBytesWritten,
    hugeBodiesEnded: async () => {
      await Promise.all(hugeBodies);
    },
    deliveriesOf: (id) => requests.filter((r) => r.headers['x-service-delivery'] === id),
    script(next) {
      script = typeof next === 'function' ? next : () => next;
    },
    queue(...replies) {
      queued.push(...replies);
    },
    waitFor(count, { timeoutMs = 10_000, filter = () => true } = {}) {
      const matching = () => requests.filter(filter);
      if (matching().length >= count) return Promise.resolve(matching());
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: ${matching().length} of ${count} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        const check = () => {
          if (matching().length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(matching());
        };
        waiters.add(check);
      });
    },
    stop,
    start,
    close: stop,
  };
  return receiver;
}
