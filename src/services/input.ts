/**
 * The parts the use cases' input schemas are made of: every message names what is wrong, never the
 * value. Their `.meta()` is prose for the OpenAPI document; a part with an `id` is one of its schemas.
 */
import { z } from 'zod';
import {
  isJsonObject,
  jsonDepth,
  MAX_JSON_DEPTH,
  NON_FINITE_MESSAGE,
  nonFiniteNumberPath,
} from '../domain/json-limits.ts';

/**
 * Kept as parsed (not copied), so every key, even `__proto__`, stays an ordinary own property. A custom
 * schema has no JSON Schema of its own: the meta gives it.
 */
export const jsonObject = z
  .custom<Record<string, unknown>>(isJsonObject, 'must be a JSON object')
  .refine(
    (value) => jsonDepth(value) <= MAX_JSON_DEPTH,
    `must not be nested deeper than ${MAX_JSON_DEPTH} levels`,
  )
  // `1e400` parses as Infinity: refused, naming the field where it is (decisions.md, 2026-11-29).
  .superRefine((value, context) => {
    const path = nonFiniteNumberPath(value);
    if (path) context.addIssue({ code: 'custom', message: NON_FINITE_MESSAGE, path });
  })
  .meta({
    id: 'JsonObject',
    type: 'object',
    additionalProperties: true,
    description: `A JSON object (not an array, not null), nested at most ${MAX_JSON_DEPTH} levels deep; every number finite (\`1e400\` is refused).`,
  });

export const text = (min: number, max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(min, min === 1 ? 'must not be empty' : `must be at least ${min} characters`)
    .max(max, `must be at most ${max} characters`);

export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** An ISO 8601 date (midnight UTC) or a date-time with its offset, as epoch milliseconds. */
export const instant = z
  .string('must be an ISO 8601 date or date-time')
  .regex(ISO_INSTANT, 'must be an ISO 8601 date or date-time')
  .transform((value) => Date.parse(value))
  .refine((value) => Number.isFinite(value), 'must be a real date');
