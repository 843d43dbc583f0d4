/** What the SDK throws. Every error is an `ApprovalsError`; its subclass says whether the service answered. */

/** Error codes of decisions.md; a newer service may send others. */
export type ErrorCode =
  | 'invalid_json'
  | 'unauthorized'
  | 'hold_limit_reached'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'validation_failed'
  /** 403: the workspace takes holds from bound API keys only, and this key is not bound to an agent. */
  | 'key_not_bound'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  | (string & {});

/** The rate-limit headers of an answer (decisions.md, Rate limits); a figure is null when absent. */
export interface RateLimit {
  limit: number | null;
  remaining: number | null;
  /** Seconds until the window ends. */
  resetSeconds: number | null;
  /** Seconds to wait before trying again (429 only). */
  retryAfterSeconds: number | null;
}

export class ApprovalsError extends Error {
  override name = 'ApprovalsError';
}

/** The service answered with an error status. */
export class ApprovalsApiError extends ApprovalsError {
  override name = 'ApprovalsApiError';
  /** The HTTP status. */
  readonly status: number;
  /** The contract's `error` code, e.g. `validation_failed` or `rate_limited`. */
  readonly code: ErrorCode;
  /** For `validation_failed`: the first field problem. */
  readonly detail: string | null;
  /** For `validation_failed`: every affected field (`field` is a dotted path). */
  readonly issues: { field: string; message: string }[];
  /** For `internal`: the id to quote to support. */
  readonly referenceId: string | null;
  readonly rateLimit: RateLimit;

  constructor(status: number, body: unknown, rateLimit: RateLimit) {
    const fields = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const code = typeof fields.error === 'string' ? fields.error : `http_${status}`;
    const detail = typeof fields.detail === 'string' ? fields.detail : null;
    super(`The approvals service answered ${status} ${code}${detail ? `: ${detail}` : ''}`);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.issues = Array.isArray(fields.issues) ? (fields.issues as { field: string; message: string }[]) : [];
    this.referenceId = typeof fields.referenceId === 'string' ? fields.referenceId : null;
    this.rateLimit = rateLimit;
  }
}

/** No answer: the connection failed or an attempt timed out, after the allowed retries. */
export class ApprovalsNetworkError extends ApprovalsError {
  override name = 'ApprovalsNetworkError';
}
