/**
 * The one HTTP client for requests the service sends out: webhooks, MCP upstreams, Slack and SMS.
 *
 * - Unless `allowPrivate`, no connection to an internal address (internal-addresses.ts): a literal IP
 *   is refused before connecting, a name's internal addresses are left out of its lookup, and the
 *   address each socket is actually connected to is checked before the request is sent (over TLS,
 *   after the handshake), so a name re-pointed inside after any earlier check (DNS rebinding) is
 *   refused too.
 * - No redirect is ever followed: it could carry the request's credentials elsewhere.
 * - No time limits of its own (undici's default is 300 s for headers and between body chunks): each
 *   caller bounds its wait with a signal, since an MCP upstream may rightly stay quiet for long.
 */
import { isIP, type LookupFunction, type Socket } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch, request } from 'undici';
import { guardedLookup, isInternalAddress } from './internal-addresses.ts';
import { inSpan, SpanKind, tracing, withTraceparent } from '../telemetry/tracing.ts';

export const INTERNAL_ADDRESS_REFUSED = 'internal address refused';

export interface HttpAnswer {
  status: number;
  /** A 2xx status. */
  ok: boolean;
  headers: Record<string, string | string[] | undefined>;
  /** The answer's body as text, up to `maxAnswerBytes` (empty unless `readText`). */
  text: string;
}

export interface SendOptions {
  /** Passed to undici as it is (PUT: the Bot Connector's activity update). */
  method: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
  /** The whole exchange, connecting and reading the answer included. */
  timeoutMs: number;
  /** At most this much of the answer is read (1 MiB unless given). */
  maxAnswerBytes?: number;
  /** Whether the answer's body is wanted (`text`); when not, it is read up to the limit and dropped. */
  readText?: boolean;
}

/** An answer's body as JSON; `{}` when it is not JSON (an error page, a cut-off body). */
export function answerJson(answer: HttpAnswer): unknown {
  try {
    return JSON.parse(answer.text) as unknown;
  } catch {
    return {};
  }
}

/** Why a request got no HTTP answer, in words fit for a delivery log (never the request's content). */
export class RequestFailed extends Error {}

/** An answer whose body is read as it comes (an MCP upstream's event stream). */
export interface HttpStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: NodeJS.ReadableStream & AsyncIterable<Buffer> & { destroy(): void; dump(): Promise<void> };
}

export interface HttpClient {
  /** One request and its answer (webhooks, Slack, SMS). Rejects with `RequestFailed` when nothing answered. */
  send(url: string, options: SendOptions): Promise<HttpAnswer>;
  /**
   * One request whose answer is read as it comes; `signal` ends it, reading included. Rejects with the
   * connection's own error (its `code`, such as ECONNREFUSED) when nothing answered.
   */
  open(
    url: string,
    options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string; signal?: AbortSignal },
  ): Promise<HttpStream>;
  /** The same client as a `fetch`, for libraries that take one (the MCP SDK's transport). */
  fetch: typeof globalThis.fetch;
  /** Ends its connections, streams still open included. */
  close(): Promise<void>;
}

const bare = (hostname: string) => hostname.replace(/^\[|\]$/g, '');

/**
 * Connects as undici does, with the address checks above. `lookup` is the name resolution to guard
 * against (tests give one that answers an internal address, as a rebinding name would).
 */
export function guardedConnector(
  allowPrivate: boolean,
  lookup: LookupFunction = guardedLookup(allowPrivate),
): buildConnector.connector {
  const connect = buildConnector({ lookup });
  if (allowPrivate) return connect;
  return (options, callback) => {
    const host = bare(options.hostname);
    if (isIP(host) && isInternalAddress(host)) return callback(new Error(INTERNAL_ADDRESS_REFUSED), null);
    connect(options, (error, socket) => {
      if (error) return callback(error, null);
      // A TLS socket has shaken hands by now (undici connects first); its address is the TCP peer's.
      if (isInternalAddress((socket as Socket).remoteAddress ?? '')) {
        socket.destroy();
        return callback(new Error(INTERNAL_ADDRESS_REFUSED), null);
      }
      callback(null, socket);
    });
  };
}

function failureOf(error: unknown, signal: AbortSignal, timeoutMs: number): RequestFailed {
  if (signal.aborted) return new RequestFailed(`timed out after ${timeoutMs / 1000} s`);
  const cause = error as NodeJS.ErrnoException;
  if (cause.message === INTERNAL_ADDRESS_REFUSED) return new RequestFailed(INTERNAL_ADDRESS_REFUSED);
  return new RequestFailed(cause.code ?? 'connection failed');
}

/**
 * A client span for a request sent out (until its answer's headers, or all of it for `send`): its
 * method and host only, never the URL's path or query (a Slack webhook's is a secret), headers or body.
 * The request carries the span's `traceparent`.
 */
function outbound<T>(method: string, url: string | URL, work: () => Promise<T>): Promise<T> {
  if (!tracing.on) return work();
  const host = URL.parse(url)?.host ?? '';
  return inSpan(method, { 'http.request.method': method, 'server.address': host }, work, SpanKind.CLIENT);
}

/** A fetch's headers, of any kind it takes, with the active trace's `traceparent` when there is one. */
function fetchHeaders(given: RequestInit['headers']) {
  const { traceparent } = withTraceparent();
  return traceparent ? { ...Object.fromEntries(new Headers(given)), traceparent } : given;
}

/** Connections are pooled per origin and kept alive; each is checked when it is made. */
export function httpClient(options: {
  allowPrivate: boolean;
  connect?: buildConnector.connector;
}): HttpClient {
  const dispatcher = new Agent({
    connect: options.connect ?? guardedConnector(options.allowPrivate),
    headersTimeout: 0,
    bodyTimeout: 0,
  });

  async function send(
    url: string,
    { timeoutMs, maxAnswerBytes = 1024 * 1024, readText = true, ...init }: SendOptions,
  ) {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new RequestFailed('invalid URL');
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new RequestFailed('invalid URL');
    // A timer cleared when done: AbortSignal.timeout's would stay for its whole time after every request.
    const abort = new AbortController();
    const { signal } = abort;
    const timer = setTimeout(() => abort.abort(), timeoutMs);
    try {
      // The text, not the URL object: undici takes a string much faster.
      const answer = await request(url, {
        ...init,
        headers: withTraceparent(init.headers),
        dispatcher,
        signal,
      });
      let text = '';
      if (readText) {
        const chunks: Buffer[] = [];
        let read = 0;
        for await (const chunk of answer.body as AsyncIterable<Buffer>) {
          chunks.push(chunk);
          read += chunk.length;
          // An answer is not ours to store: read what is needed, then stop.
          if (read >= maxAnswerBytes) {
            answer.body.destroy();
            break;
          }
        }
        text = Buffer.concat(chunks).subarray(0, maxAnswerBytes).toString('utf8');
      } else {
        // Read and dropped (far cheaper than reading it as a stream), the connection closed past the limit.
        await answer.body.dump({ limit: maxAnswerBytes });
      }
      const status = answer.statusCode;
      return { status, ok: status >= 200 && status <= 299, headers: answer.headers, text };
    } catch (error) {
      throw failureOf(error, signal, timeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }

  const fetch = ((input: string | URL, init?: RequestInit) =>
    outbound(init?.method ?? 'GET', input, () =>
      undiciFetch(input, {
        ...({ ...init, headers: fetchHeaders(init?.headers) } as object),
        redirect: 'error',
        dispatcher,
      }),
    )) as unknown as typeof globalThis.fetch;

  const open: HttpClient['open'] = (url, options) =>
    outbound(options.method, url, async () => {
      const answer = await request(url, {
        ...options,
        headers: withTraceparent(options.headers),
        dispatcher,
      });
      return { status: answer.statusCode, headers: answer.headers, body: answer.body };
    });

  return {
    send: (url, options) => outbound(options.method, url, () => send(url, options)),
    open,
    fetch,
    close: () => dispatcher.destroy(),
  };
}
