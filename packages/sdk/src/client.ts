/** The client of the Hold API: submit a hold, read it, wait for its decision. */
import { ApprovalsApiError, ApprovalsError, ApprovalsNetworkError, type RateLimit } from './errors.ts';
import type { Decision, HoldCreated, HoldRecord, HoldStatus, HoldSubmission } from './types.ts';

export interface ApprovalsClientOptions {
  /** An API key of the workspace: `svc_live_…` or `svc_test_…`. */
  apiKey: string;
  /** The service's address, e.g. `https://approvals.example.com` (the Core API is below `/api/v1`). */
  baseUrl: string;
  /** The `fetch` to use; default the global one. */
  fetch?: typeof fetch;
  /** Retries after an attempt that may succeed when repeated (network error, 5xx, 429); default 3. */
  maxRetries?: number;
  /** Time one attempt may take before it counts as a network error; default 30 s (a long-poll adds its own wait). */
  requestTimeoutMs?: number;
}

export interface HoldRequest extends HoldSubmission {
  /** Wait for the decision by long-poll (default true); with false, return as soon as the hold is submitted. */
  wait?: boolean;
  /** How long to wait for a decision, in milliseconds; default 15 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** How long to wait for a decision, in milliseconds; default 15 minutes. The service is asked at least once. */
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface HoldResult {
  /** The reference, `svc_pa_…`. */
  id: string;
  /** The stored status. `pending` after a wait means nobody decided within the timeout. */
  status: HoldStatus;
  /** The public status page: safe to link from tickets and chats. */
  statusUrl: string;
  /** The action may run: allowed by a rule, or approved by the people required. */
  approved: boolean;
  /** The action must not run: denied by a rule or rejected by a person. */
  rejected: boolean;
  /** Null while pending, for allowed and for expired holds. */
  decision: Decision | null;
  /** An approver changed the arguments before approving: run `arguments`, not what you submitted. */
  changed: boolean;
  /**
   * What to run: the arguments an approver changed, else (from `hold()`) those submitted. Null when
   * the SDK does not know them: `waitForDecision` of a hold nobody changed.
   */
  arguments: Record<string, unknown> | null;
  /** The full record when the SDK read one; null when the submission's answer said everything. */
  record: HoldRecord | null;
  /** The signed receipt of an approved or allowed hold, for the system that performs it (`verifyReceipt`). */
  receipt: string | null;
  /** True when the idempotency key had been used before and this is the original hold. */
  replayed: boolean;
}

const DEFAULT_WAIT_MS = 15 * 60_000;
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 3;
/** The longest long-poll round the service allows (decisions.md). */
const MAX_WAIT_ROUND_S = 60;
const BACKOFF_BASE_MS = 500;
const BACKOFF_MAX_MS = 8_000;
/** A Retry-After beyond one rate-limit window is not waited for: the caller decides. */
const MAX_RETRY_AFTER_S = 60;
const RETRYABLE_STATUSES = new Set([500, 502, 503, 504]);

export class ApprovalsClient {
  readonly #apiKey: string;
  readonly #baseUrl: string;
  readonly #fetch: typeof fetch;
  readonly #maxRetries: number;
  readonly #requestTimeoutMs: number;

  constructor(options: ApprovalsClientOptions) {
    if (typeof options?.apiKey !== 'string' || options.apiKey === '') {
      throw new TypeError('ApprovalsClient: apiKey is required');
    }
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError('ApprovalsClient: baseUrl must be an http:// or https:// address');
    }
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('ApprovalsClient: no fetch available; pass one');
    this.#apiKey = options.apiKey;
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    // Called unbound, a browser's fetch throws "Illegal invocation".
    this.#fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.#maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  /**
   * Submits a hold. By default waits for the decision (up to `timeoutMs`); with `wait: false` returns
   * once the rules have answered. Retrying with the same `idempotency_key` never makes a second hold.
   */
  async hold(request: HoldRequest): Promise<HoldResult> {
    const { wait = true, timeoutMs = DEFAULT_WAIT_MS, signal, ...submission } = request ?? {};
    if (typeof submission.idempotency_key !== 'string' || submission.idempotency_key === '') {
      throw new TypeError(
        'hold(): idempotency_key is required: a string unique per logical action, reused on retries',
      );
    }
    const created = await this.#call<HoldCreated>('POST', '/api/v1/holds', submission, signal);
    const submitted = submission.arguments ?? {};
    const { id, status, status_url: statusUrl } = created.body;
    const replayed = created.replayed;
    if (status === 'allowed') {
      return {
        id,
        status: 'auto_allowed',
        statusUrl,
        approved: true,
        rejected: false,
        decision: null,
        changed: false,
        arguments: submitted,
        record: null,
        receipt: created.body.receipt ?? null,
        replayed,
      };
    }
    if (status === 'pending' && wait) {
      const result = await this.waitForDecision(id, { timeoutMs, signal });
      return { ...result, arguments: result.arguments ?? submitted, statusUrl, replayed };
    }
    if (status === 'pending' && !replayed) {
      return {
        id,
        status,
        statusUrl,
        approved: false,
        rejected: false,
        decision: null,
        changed: false,
        arguments: submitted,
        record: null,
        receipt: null,
        replayed,
      };
    }
    // A denial's reason is in the record; a replayed pending hold may have been decided since.
    return { ...resultOf(await this.#read(id, signal), statusUrl, submitted), replayed };
  }

  /** Reads a hold once. */
  async getHold(id: string, options: RequestOptions = {}): Promise<HoldResult> {
    return resultOf(await this.#read(id, options.signal), this.#statusUrl(id));
  }

  /**
   * Long-polls until the hold is decided or `timeoutMs` passes, in rounds of at most 60 s. Resolves
   * with the hold either way: `status` is still `pending` when nobody decided in time.
   */
  async waitForDecision(id: string, options: WaitOptions = {}): Promise<HoldResult> {
    const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_WAIT_MS);
    let record: HoldRecord;
    do {
      const seconds = Math.min(MAX_WAIT_ROUND_S, Math.max(1, Math.ceil((deadline - Date.now()) / 1000)));
      const answer = await this.#call<HoldRecord>(
        'POST',
        `/api/v1/holds/${encodeURIComponent(id)}/wait`,
        { timeout_seconds: seconds },
        options.signal,
        seconds * 1000,
      );
      record = answer.body;
    } while (record.status === 'pending' && Date.now() < deadline);
    return resultOf(record, this.#statusUrl(id));
  }

  async #read(id: string, signal: AbortSignal | undefined): Promise<HoldRecord> {
    return (await this.#call<HoldRecord>('GET', `/api/v1/holds/${encodeURIComponent(id)}`, undefined, signal))
      .body;
  }

  #statusUrl(id: string): string {
    return `${this.#baseUrl}/a/${encodeURIComponent(id)}`;
  }

  /**
   * One operation, with retries where repeating is safe. All three operations are: reads and the
   * long-poll change nothing, and a repeated submission is answered by its idempotency key.
   */
  async #call<T>(
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    signal: AbortSignal | undefined,
    extraTimeoutMs = 0,
  ): Promise<{ body: T; replayed: boolean }> {
    const init: RequestInit = {
      method,
      headers: {
        authorization: `Bearer ${this.#apiKey}`,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    };
    for (let attempt = 0; ; attempt++) {
      signal?.throwIfAborted();
      const limit = linkedSignal(signal, this.#requestTimeoutMs + extraTimeoutMs);
      let status: number;
      let headers: Headers;
      let text: string;
      try {
        const response = await this.#fetch(`${this.#baseUrl}${path}`, { ...init, signal: limit.signal });
        status = response.status;
        headers = response.headers;
        text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (attempt >= this.#maxRetries) {
          throw new ApprovalsNetworkError(`The approvals service could not be reached (${describe(error)})`, {
            cause: error,
          });
        }
        await sleep(backoff(attempt), signal);
        continue;
      } finally {
        limit.release();
      }
      if (status >= 200 && status < 300) {
        const body = parseJson(text);
        // A 2xx that is not JSON is not the service (a proxy's page, a wrong baseUrl).
        if (body === undefined)
          throw new ApprovalsError(`The answer from ${path} is not JSON; is baseUrl right?`);
        return { body: body as T, replayed: headers.get('idempotent-replayed') === 'true' };
      }
      const rateLimit = rateLimitOf(headers);
      const error = new ApprovalsApiError(status, parseJson(text), rateLimit);
      const delay =
        status === 429
          ? (rateLimit.retryAfterSeconds ?? 1) * 1000
          : RETRYABLE_STATUSES.has(status)
            ? backoff(attempt)
            : null;
      if (delay === null || attempt >= this.#maxRetries || delay > MAX_RETRY_AFTER_S * 1000) throw error;
      await sleep(delay, signal);
    }
  }
}

function resultOf(
  record: HoldRecord,
  statusUrl: string,
  submitted: Record<string, unknown> | null = null,
): HoldResult {
  return {
    id: record.id,
    status: record.status,
    statusUrl,
    approved: record.status === 'auto_allowed' || record.decision?.verdict === 'approve',
    rejected: record.decision?.verdict === 'reject',
    decision: record.decision,
    changed: record.arguments_changed === true,
    arguments: record.decision?.changed_arguments ?? submitted,
    record,
    receipt: record.receipt ?? null,
    replayed: false,
  };
}

/** Exponential backoff with jitter: 0.5 s, 1 s, 2 s … up to 8 s, each between half and all of it. */
function backoff(attempt: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** attempt);
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function rateLimitOf(headers: Headers): RateLimit {
  const figure = (name: string) => {
    const value = headers.get(name);
    return value !== null && /^\d+$/.test(value.trim()) ? Number(value) : null;
  };
  return {
    limit: figure('ratelimit-limit'),
    remaining: figure('ratelimit-remaining'),
    resetSeconds: figure('ratelimit-reset'),
    retryAfterSeconds: figure('retry-after'),
  };
}

/** The parsed body, or undefined when it is not JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A signal that aborts with the caller's signal, or on its own after `ms`. */
function linkedSignal(outer: AbortSignal | undefined, ms: number) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error(`no answer within ${ms} ms`)), ms);
  const forward = () => controller.abort(outer!.reason);
  outer?.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      outer?.removeEventListener('abort', forward);
    },
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
