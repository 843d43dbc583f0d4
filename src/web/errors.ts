/** Every failure becomes the contract's error shape here, in one place (decisions.md, Errors). */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import {
  ChainFrozenError,
  describeSafely,
  type FieldIssue,
  isStorageUnavailable,
  ServiceError,
  type ServiceErrorCode,
} from '../services/errors.ts';

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string) {
    super(code);
    this.status = status;
    this.code = code;
  }
}

const SERVICE_STATUS: Record<ServiceErrorCode, number> = {
  not_found: 404,
  validation_failed: 422,
  hold_limit_reached: 402,
  conflict: 409,
  key_not_bound: 403,
};

const FRAMEWORK_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'payload_too_large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported_media_type'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'invalid_json'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'invalid_json'],
  FST_ERR_BAD_URL: [404, 'not_found'],
};

export function sendError(
  reply: FastifyReply,
  status: number,
  code: string,
  extra: Record<string, unknown> = {},
) {
  if (status === 401) reply.header('WWW-Authenticate', 'Bearer');
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ error: code, ...extra });
}

export function sendValidationError(reply: FastifyReply, docsUrl: string, issues: FieldIssue[]) {
  const [first] = issues;
  return sendError(reply, 422, 'validation_failed', {
    detail: first ? `${first.field}: ${first.message}` : 'the request is not valid',
    // Each issue as the contract shapes it: the field, the message and, for a file, its line.
    issues: issues.map(({ field, message, line }) =>
      line === undefined ? { field, message } : { field, message, line },
    ),
    docs: docsUrl,
  });
}

/**
 * Zod issues as `{ field, message }` with a dotted path, the first problem of each field only;
 * messages never carry the submitted value.
 */
export function fieldIssues(error: z.ZodError): FieldIssue[] {
  const issues = new Map<string, FieldIssue>();
  for (const issue of error.issues) {
    const field = issue.path.map(String).join('.') || '(body)';
    if (!issues.has(field)) issues.set(field, { field, message: issue.message });
  }
  return [...issues.values()];
}

export function errorHandler(docsUrl: () => string) {
  return (error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof HttpError) return sendError(reply, error.status, error.code);
    if (error instanceof ServiceError) {
      if (error.code === 'validation_failed') return sendValidationError(reply, docsUrl(), error.issues);
      // Who changed what since the version the caller read (stored names, never the request's values).
      if (error.code === 'conflict') return sendError(reply, 409, 'conflict', { detail: error.message });
      return sendError(reply, SERVICE_STATUS[error.code], error.code);
    }
    if (error instanceof ChainFrozenError)
      return sendError(reply, 503, 'evidence_frozen', { detail: error.message });
    if (isStorageUnavailable(error)) {
      request.log.warn(describeSafely(error.cause), 'storage unavailable');
      reply.header('Retry-After', '5');
      return sendError(reply, 503, 'unavailable');
    }
    const known = FRAMEWORK_ERRORS[(error as FastifyError).code ?? ''];
    if (known) return sendError(reply, known[0], known[1]);
    const status = (error as FastifyError).statusCode;
    if (status && status >= 400 && status < 500) return sendError(reply, 400, 'bad_request');
    const referenceId = randomUUID();
    request.log.error({ referenceId, ...describeSafely(error) }, 'internal error');
    return sendError(reply, 500, 'internal', { referenceId });
  };
}
