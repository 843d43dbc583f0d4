/** Request bodies of the Core API (interface.md and decisions.md), with messages that never quote a value. */
import { z } from 'zod';
import { jsonDepth, MAX_JSON_DEPTH } from '../domain/json-limits.ts';

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Kept as parsed (not copied), so every key, even `__proto__`, stays an ordinary own property. */
const jsonObject = z
  .custom<Record<string, unknown>>(isJsonObject, 'must be a JSON object')
  .refine(
    (value) => jsonDepth(value) <= MAX_JSON_DEPTH,
    `must not be nested deeper than ${MAX_JSON_DEPTH} levels`,
  );

const text = (min: number, max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(min, min === 1 ? 'must not be empty' : `must be at least ${min} characters`)
    .max(max, `must be at most ${max} characters`);

export const holdSubmissionSchema = z.object({
  tool_name: text(1, 200).regex(/^[A-Za-z0-9_.:/-]+$/, 'may contain only A-Z a-z 0-9 _ . : / -'),
  arguments: jsonObject.optional(),
  agent_identity: z.object(
    { id: text(1, 200), label: text(0, 200).nullable().optional() },
    { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an object with an id') },
  ),
  context: jsonObject.optional(),
  idempotency_key: text(1, 255),
});

export const waitBodySchema = z.object(
  {
    timeout_seconds: z
      .number('must be a number')
      .int('must be a whole number')
      .min(1, 'must be between 1 and 60')
      .max(60, 'must be between 1 and 60')
      .optional(),
  },
  'must be a JSON object',
);

const sequenceNumber = z.coerce
  .number('must be a positive integer')
  .int('must be a positive integer')
  .min(1, 'must be a positive integer')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

export const verifyQuerySchema = z
  .object({ from_seq: sequenceNumber.optional(), to_seq: sequenceNumber.optional() })
  .refine((q) => q.from_seq === undefined || q.to_seq === undefined || q.from_seq <= q.to_seq, {
    message: 'must not be smaller than from_seq',
    path: ['to_seq'],
  });

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** An ISO 8601 date (midnight UTC) or a date-time with its offset, as epoch milliseconds. */
const instant = z
  .string('must be an ISO 8601 date or date-time')
  .regex(ISO_INSTANT, 'must be an ISO 8601 date or date-time')
  .transform((value) => Date.parse(value))
  .refine((value) => Number.isFinite(value), 'must be a real date');

/** Query of GET /api/v1/audit/checkpoints: `since` is a seq (those after it) or a time (those published from it). */
export const checkpointsQuerySchema = z.object({
  since: z
    .string()
    .optional()
    .transform((value, context): { afterSeq: number } | { sinceMs: number } | undefined => {
      if (value === undefined) return undefined;
      if (/^\d{1,15}$/.test(value)) return { afterSeq: Number(value) };
      const ms = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
      if (Number.isFinite(ms)) return { sinceMs: ms };
      context.addIssue({ code: 'custom', message: 'must be a seq or an ISO 8601 date-time' });
      return z.NEVER;
    }),
  limit: z.coerce
    .number('must be a whole number from 1 to 1000')
    .int('must be a whole number from 1 to 1000')
    .min(1, 'must be a whole number from 1 to 1000')
    .max(1000, 'must be a whole number from 1 to 1000')
    .default(100),
});

/** Query of GET /api/v1/reports/* (decisions.md, Reports); the period is completed by the route. */
export const reportQuerySchema = z
  .object({
    format: z.enum(['csv', 'pdf'], 'must be csv or pdf').optional(),
    from: instant.optional(),
    to: instant.optional(),
    tool: text(1, 200).optional(),
    agent: text(1, 200).optional(),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, {
    message: 'must be after from',
    path: ['to'],
  });
