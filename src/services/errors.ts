/**
 * Failures a caller can act on; transports map `code` to their own shape (HTTP status, CLI exit). And
 * what every transport and worker needs of the other failures: whether storage was unreachable, and
 * what may be logged of an error.
 */
import { StorageUnavailableError } from '../store/db.ts';

export type ServiceErrorCode =
  | 'not_found'
  | 'validation_failed'
  | 'hold_limit_reached'
  | 'conflict'
  /** A hold from an API key not bound to an agent, where the workspace requires bound keys. */
  | 'key_not_bound';

export interface FieldIssue {
  field: string;
  message: string;
  /** The line of an input file, where there is one. */
  line?: number;
  /**
   * The stored rule the issue is about, when a change that leaves the rules out would break it: `field`
   * then holds its stored index, and `message` starts with `storedRuleNote(rule)`
   * (services/config-cross-check.ts).
   */
  rule?: string;
}

export class ServiceError extends Error {
  readonly code: ServiceErrorCode;
  readonly issues: FieldIssue[];

  constructor(code: ServiceErrorCode, message: string, issues: FieldIssue[] = []) {
    super(message);
    this.name = 'ServiceError';
    this.code = code;
    this.issues = issues;
  }
}

export const notFound = (what: string) => new ServiceError('not_found', `${what} not found`);

export const invalid = (field: string, message: string) =>
  new ServiceError('validation_failed', `${field}: ${message}`, [{ field, message }]);

/**
 * The workspace's evidence chain failed the signer's check before an append and is frozen
 * (services/chain-guard.ts): no write of that workspace can be recorded until an operator re-anchors
 * it. Not a ServiceError: no caller can act on it, and no handler of those may swallow it.
 */
export class ChainFrozenError extends Error {
  constructor() {
    super(
      "the workspace's evidence chain failed its check before an append and is frozen until an operator re-anchors it",
    );
    this.name = 'ChainFrozenError';
  }
}

/** Storage could not be reached (refused, full, shutting down): worth trying again later. */
export const isStorageUnavailable = (error: unknown): error is StorageUnavailableError =>
  error instanceof StorageUnavailableError;

/**
 * What an unexpected error may put in a log line: its kind and where it happened. Messages are left
 * out because drivers and parsers quote the offending value in them. SQLite's own description of its
 * result code is kept (a fixed text, such as "database or disk is full"): its `code` says only
 * ERR_SQLITE_ERROR.
 */
export function describeSafely(error: unknown) {
  const { name, code, stack, errcode, errstr } = error as {
    name?: string;
    code?: string;
    stack?: string;
    errcode?: number;
    errstr?: string;
  };
  const frames = (stack ?? '').split('\n').filter((line) => line.trimStart().startsWith('at '));
  return {
    errorName: name ?? typeof error,
    errorCode: code,
    ...(errcode !== undefined ? { sqliteCode: errcode, sqliteError: errstr } : {}),
    stack: frames.slice(0, 12).join('\n'),
  };
}
