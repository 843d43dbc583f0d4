/** Every failure becomes the contract's error shape here, in one place (decisions.md, Errors). */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import { type FieldIssue, ServiceError, type ServiceErrorCode } from '../services/errors.ts';
import { StorageUnavailableError } from '../store/db.ts';

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
    issues,
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
      return sendError(reply, SERVICE_STATUS[error.code], error.code);
    }
    if (error instanceof StorageUnavailableError) {
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
