/** Failures a caller can act on; transports map `code` to their own shape (HTTP status, CLI exit). */
export type ServiceErrorCode = 'not_found' | 'validation_failed' | 'hold_limit_reached';

export interface FieldIssue {
  field: string;
  message: string;
  /** The line of an input file, where there is one. */
  line?: number;
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
