/**
 * One tools/call to a 2025-era upstream session over plain HTTP, without the MCP SDK's client: the
 * request every allowed and approved call makes. The SDK's client spends more CPU on a call than
 * the rest of the proxy does (web streams for every answer, each message validated on the way);
 * here the answer is read as it comes and each message is parsed once, to route it:
 *
 * - the call's answer (a result or a JSON-RPC error), as JSON or on an event stream;
 * - its progress, which restarts the call's timeout and goes to `onProgress`;
 * - the upstream's requests to a client during the call (sampling, elicitation, roots, ping),
 *   answered in a POST of their own with what `onRequest` gives;
 * - any other notification, to `onNotification`;
 * - a stream the upstream ends before it answers, resumed with `Last-Event-ID` after the wait it
 *   asked for (2025-11-25: a server may close a long call's stream and have the client come back).
 *
 * Failures are the SDK client's errors, which `UpstreamPool` sorts as it always has: a JSON-RPC
 * error is a `ProtocolError`; no answer in time an `SdkError` RequestTimeout; a stream lost for good
 * ConnectionClosed; an answer that is no tool result InvalidResult; an HTTP refusal carries its
 * `status` in `data`; a connection that could not be made is the connection's own error. A call
 * given up (timeout or `signal`) is cancelled upstream with `notifications/cancelled`.
 */
import { ProtocolError, SdkError, SdkErrorCode, specTypeSchemas } from '@modelcontextprotocol/client';
import { isJsonObject } from '../domain/json-limits.ts';
import type { HttpClient, HttpStream } from '../net/http-client.ts';
import type { CallToolResult, ClientFeatureRequest } from '../services/proxy-call.ts';
import type { UpstreamNotification } from './relay.ts';

/** Where a 2025-era upstream session is reached: its URL, and every request's headers. */
export interface UpstreamSession {
  url: string;
  /** The registration's own headers (credentials), the session id and the negotiated revision. */
  headers: Record<string, string>;
}

export interface UpstreamCallOptions {
  /** Without an answer or progress for this long, the call is given up. */
  timeoutMs: number;
  /** Aborted when the call's client is gone or cancelled it. */
  signal?: AbortSignal;
  onProgress(progress: { progress: number; total?: number; message?: string }): void;
  /** Answers a request of the upstream's during the call; throws a JSON-RPC error (`code`, `message`) to refuse it. */
  onRequest(request: ClientFeatureRequest, signal: AbortSignal): Promise<Record<string, unknown>>;
  onNotification(notification: UpstreamNotification): void;
}

type Message = {
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { code?: unknown; message?: unknown; data?: unknown };
};

/** How often a stream that ended before its answer is resumed without hearing anything, and the wait between. */
const RESUMPTIONS = 2;
const RESUME_WAIT_MS = 1_000;

/** The wait an upstream asks for between resumptions is honoured up to this. */
const LONGEST_RESUME_WAIT_MS = 30_000;

/** How long an answer to the upstream's request, or a cancellation, may take to be taken. */
const REPLY_TIMEOUT_MS = 10_000;

/** How long the rest of an answer's stream is read after the answer before its connection is closed. */
const DRAIN_MS = 5_000;

/**
 * Why what a call left waiting is given up when it is over (the upstream's requests to a client):
 * one reason for every call, since an abort without one makes a new error each time.
 */
export const CALL_ENDED = new Error('the call ended');

/** One answer read to its end: the call's answer, or where to resume the stream it came on. */
type Reading = { answer: CallToolResult } | { heard: boolean };

interface StreamEvent {
  data: string | undefined;
  id: string | undefined;
  retry: number | undefined;
}

/**
 * A parser of an event stream (the format of the HTML standard's EventSource): give it the stream's
 * chunks as they come, and it calls `onEvent` with each event as it completes.
 */
function eventParser(onEvent: (event: StreamEvent) => void) {
  const decoder = new TextDecoder();
  let pending = '';
  let data: string[] = [];
  let id: string | undefined;
  let retry: number | undefined;
  /** Whether the event being read has a field: a comment alone (a keep-alive) is no event. */
  let fields = false;
  return (chunk: Buffer) => {
    pending += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = pending.search(/\r\n|\r|\n/)) !== -1) {
      // A CR that ends what came so far may be half of a CRLF: the rest comes with the next chunk.
      if (end === pending.length - 1 && pending[end] === '\r') break;
      const line = pending.slice(0, end);
      pending = pending.slice(end + (pending.startsWith('\r\n', end) ? 2 : 1));
      if (line === '') {
        if (fields) onEvent({ data: data.length > 0 ? data.join('\n') : undefined, id, retry });
        data = [];
        retry = undefined;
        fields = false;
        continue;
      }
      if (line.startsWith(':')) continue;
      fields = true;
      const colon = line.indexOf(':');
      const field = colon === -1 ? line : line.slice(0, colon);
      let value = colon === -1 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    }
  };
}

const toolResultSchema = specTypeSchemas.CallToolResult['~standard'];

/**
 * The call's result as the SDK's client gave it: checked against the SDK's schema of a tool result
 * and in its form (`content` an empty list when left out, what the schema does not know left out).
 */
function toolResult(result: unknown): CallToolResult {
  const checked = toolResultSchema.validate(result);
  if (checked instanceof Promise || checked.issues)
    throw new SdkError(SdkErrorCode.InvalidResult, 'the answer is not a tool result');
  return checked.value as CallToolResult;
}

/** A tools/call's params; `_meta`: what the proxy adds (the hold's receipt), beside the progress token. */
interface ToolCallParams {
  name: string;
  arguments: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export async function callToolOverHttp(
  http: HttpClient,
  session: UpstreamSession,
  id: string,
  params: ToolCallParams,
  options: UpstreamCallOptions,
): Promise<CallToolResult> {
  // Already cancelled (while its hold was stored, say): nothing is sent.
  if (options.signal?.aborted) throw options.signal.reason;
  return new ToolCallExchange(http, session, id, options).run(params);
}

/** The call's exchange with the upstream, from its POST to its answer, and what it left waiting after. */
class ToolCallExchange {
  readonly #http: HttpClient;
  readonly #session: UpstreamSession;
  readonly #id: string;
  readonly #options: UpstreamCallOptions;
  /** Aborted when the call is given up (its timeout, or its client): its requests upstream end. */
  readonly #ended = new AbortController();
  /** Aborted when the call is over, however: what it left waiting (the upstream's requests) ends. */
  readonly #over = new AbortController();
  #timedOut = false;
  readonly #timer: NodeJS.Timeout;
  /** The upstream's requests being answered, by their id as JSON: the upstream may cancel them. */
  readonly #asked = new Map<string, AbortController>();
  /** The wait before a stream is resumed: the upstream's last word on it (`retry`), else a second. */
  #resumeWaitMs = RESUME_WAIT_MS;
  /** The last event id the upstream gave, on any of the call's streams: where the next one resumes. */
  #lastEventId: string | undefined;

  constructor(http: HttpClient, session: UpstreamSession, id: string, options: UpstreamCallOptions) {
    this.#http = http;
    this.#session = session;
    this.#id = id;
    this.#options = options;
    // The error is made only when it happens: an error's stack costs more than a whole call's parsing.
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#ended.abort(new SdkError(SdkErrorCode.RequestTimeout, 'the upstream did not answer in time'));
    }, options.timeoutMs);
    options.signal?.addEventListener('abort', this.#cancelled, { once: true });
  }

  /** The call's client is gone or cancelled it. */
  readonly #cancelled = () => this.#ended.abort(this.#options.signal!.reason);

  /** Sends the call and reads its answer, resuming the stream it comes on when the upstream ends it early. */
  async run(params: ToolCallParams): Promise<CallToolResult> {
    try {
      let answer = await this.#send(params);
      // From here the upstream has the call and may be running it: whatever fails now is a connection
      // lost before the answer, never a call that did not get there (which would be sent again).
      let quietResumptions = 0;
      for (;;) {
        const outcome = await this.#read(answer).catch(this.#lost);
        if ('answer' in outcome) return outcome.answer;
        quietResumptions = outcome.heard ? 0 : quietResumptions + 1;
        if (this.#lastEventId === undefined || quietResumptions > RESUMPTIONS)
          throw new SdkError(
            SdkErrorCode.ConnectionClosed,
            'the upstream ended the stream before it answered',
          );
        answer = await this.#resume(this.#lastEventId);
      }
    } catch (error) {
      // Given up (its timeout, or its client): the upstream is told, and the reason is the failure.
      if (this.#ended.signal.aborted) {
        this.#reply({
          method: 'notifications/cancelled',
          params: { requestId: this.#id, reason: this.#timedOut ? 'timed out' : 'cancelled' },
        });
        throw this.#ended.signal.reason;
      }
      throw error;
    } finally {
      clearTimeout(this.#timer);
      this.#options.signal?.removeEventListener('abort', this.#cancelled);
      this.#over.abort(this.#ended.signal.aborted ? this.#ended.signal.reason : CALL_ENDED);
    }
  }

  #post(message: object, signal?: AbortSignal) {
    return this.#http.open(this.#session.url, {
      method: 'POST',
      headers: {
        ...this.#session.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', ...message }),
      signal,
    });
  }

  /** Answers to the upstream's own requests and cancellations, sent as they are ready, each bounded. */
  #reply(message: object) {
    void this.#post(message, AbortSignal.timeout(REPLY_TIMEOUT_MS))
      .then((answer) => answer.body.dump())
      .catch(() => undefined);
  }

  /** The call's POST; an HTTP refusal means the upstream does not have the call. */
  async #send(params: ToolCallParams): Promise<HttpStream> {
    const _meta = { ...params._meta, progressToken: this.#id };
    const answer = await this.#post(
      { id: this.#id, method: 'tools/call', params: { ...params, _meta } },
      this.#ended.signal,
    );
    if (answer.status < 200 || answer.status > 299) {
      await answer.body.dump().catch(() => undefined);
      throw new SdkError(SdkErrorCode.SendFailed, `the upstream answered HTTP ${answer.status}`, {
        status: answer.status,
      });
    }
    return answer;
  }

  /** After the wait the upstream asked for, its stream again from the last event it gave. */
  async #resume(lastEventId: string): Promise<HttpStream> {
    const ended = this.#ended.signal;
    await new Promise((resolve, reject) => {
      const resume = setTimeout(resolve, this.#resumeWaitMs);
      ended.addEventListener('abort', () => (clearTimeout(resume), reject(ended.reason)), { once: true });
    });
    const answer = await this.#http
      .open(this.#session.url, {
        method: 'GET',
        headers: { ...this.#session.headers, accept: 'text/event-stream', 'last-event-id': lastEventId },
        signal: ended,
      })
      .catch(this.#lost);
    if (answer.status < 200 || answer.status > 299) {
      await answer.body.dump().catch(() => undefined);
      throw new SdkError(
        SdkErrorCode.ConnectionClosed,
        `the stream could not be resumed (HTTP ${answer.status})`,
      );
    }
    return answer;
  }

  /** A failure once the call was accepted: as it is when the call was given up or answered with an error. */
  readonly #lost = (error: unknown): never => {
    if (this.#ended.signal.aborted || error instanceof ProtocolError || error instanceof SdkError)
      throw error;
    throw new SdkError(SdkErrorCode.ConnectionClosed, 'the connection to the upstream was lost', undefined, {
      cause: error,
    });
  };

  /** One message of the upstream's; the call's answer when it is one. */
  #route(message: Message): { answer: CallToolResult } | undefined {
    if (message.id === this.#id && (message.result !== undefined || message.error !== undefined)) {
      if (message.error) {
        const { code, message: text, data } = message.error;
        if (typeof code !== 'number')
          throw new SdkError(SdkErrorCode.InvalidResult, 'an error without a code');
        throw new ProtocolError(code, String(text ?? ''), data);
      }
      return { answer: toolResult(message.result) };
    }
    if (message.method === undefined) return;
    if (message.id !== undefined && message.id !== null) {
      this.#answerRequest(message.id, message.method, message.params);
      return;
    }
    if (message.method === 'notifications/progress' && message.params?.progressToken === this.#id) {
      this.#timer.refresh();
      const progress = { ...message.params } as { progress: number; progressToken?: unknown };
      delete progress.progressToken;
      this.#options.onProgress(progress);
      return;
    }
    if (message.method === 'notifications/cancelled') {
      this.#asked
        .get(JSON.stringify(message.params?.requestId))
        ?.abort(new Error('cancelled by the upstream'));
      return;
    }
    this.#options.onNotification({
      method: message.method,
      ...(message.params ? { params: message.params } : {}),
    });
  }

  /**
   * A request of the upstream's to a client during the call, answered in a POST of its own: a ping
   * at once, sampling, elicitation and roots with what `onRequest` gives, anything else not found.
   */
  #answerRequest(requestId: string | number, method: string, params: Record<string, unknown> | undefined) {
    const controller = new AbortController();
    const key = JSON.stringify(requestId);
    this.#asked.set(key, controller);
    const signal = AbortSignal.any([controller.signal, this.#over.signal]);
    const answered =
      method === 'ping'
        ? Promise.resolve({})
        : ['sampling/createMessage', 'elicitation/create', 'roots/list'].includes(method)
          ? this.#options.onRequest({ method, params } as ClientFeatureRequest, signal)
          : Promise.reject(new ProtocolError(-32601, 'Method not found'));
    void answered
      .then(
        (result) => this.#reply({ id: requestId, result }),
        (error: { code?: unknown; message?: unknown; data?: unknown }) =>
          this.#reply({
            id: requestId,
            error: {
              code: typeof error.code === 'number' ? error.code : -32603,
              message: String(error.message ?? 'Internal error'),
              ...(error.data !== undefined ? { data: error.data } : {}),
            },
          }),
      )
      .finally(() => this.#asked.delete(key));
  }

  /** Reads one answer to the end; the call's answer if it came, and where to resume if not. */
  async #read(answer: HttpStream): Promise<Reading> {
    const type = String(answer.headers['content-type'] ?? '');
    return type.includes('text/event-stream') ? this.#readEvents(answer) : this.#readJson(answer);
  }

  async #readJson(answer: HttpStream): Promise<Reading> {
    const chunks: Buffer[] = [];
    for await (const chunk of answer.body) chunks.push(chunk);
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new SdkError(SdkErrorCode.InvalidResult, 'the answer is not JSON');
    }
    for (const message of Array.isArray(body) ? body : [body]) {
      const routed = isJsonObject(message) ? this.#route(message as Message) : undefined;
      if (routed) return routed;
    }
    return { heard: true };
  }

  /**
   * Read with listeners, not an iterator: leaving an iterator early would destroy the stream and its
   * connection. After the answer, the rest is read and dropped so the connection is kept for the next
   * call (the upstream ends the stream after its answer), but not for long.
   */
  #readEvents(answer: HttpStream): Promise<Reading> {
    return new Promise<Reading>((resolve, reject) => {
      const body = answer.body;
      let heard = false;
      let settled = false;
      let drain: NodeJS.Timeout | undefined;
      const parse = eventParser((event) => {
        if (settled) return;
        heard = true;
        if (event.id !== undefined) this.#lastEventId = event.id;
        if (event.retry !== undefined) this.#resumeWaitMs = Math.min(event.retry, LONGEST_RESUME_WAIT_MS);
        const message = event.data ? messageOf(event.data) : undefined;
        if (!message) return;
        let routed: Reading | undefined;
        try {
          routed = this.#route(message);
        } catch (error) {
          settled = true;
          body.destroy();
          return reject(error as Error);
        }
        if (!routed) return;
        settled = true;
        resolve(routed);
        drain = setTimeout(() => body.destroy(), DRAIN_MS);
        drain.unref();
      });
      body.on('data', (chunk: Buffer) => {
        if (!settled) parse(chunk);
      });
      body.on('end', () => {
        clearTimeout(drain);
        if (settled) return;
        settled = true;
        resolve({ heard });
      });
      body.on('error', (error: Error) => {
        clearTimeout(drain);
        if (!settled) {
          settled = true;
          reject(error);
        }
      });
    });
  }
}

/** An event's data as a message of the upstream's; undefined when it is no JSON object. */
function messageOf(data: string): Message | undefined {
  let message: unknown;
  try {
    message = JSON.parse(data);
  } catch {
    return undefined;
  }
  return isJsonObject(message) ? (message as Message) : undefined;
}
