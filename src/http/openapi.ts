/**
 * The OpenAPI 3.1 document of the Core API and the public pages beside it, served at /docs/openapi.json.
 * Its paths are written from the route table (core-api.ts), the definitions the server registers and
 * validates with; bodies, parameters and their prose and examples come from their zod schemas. This file
 * adds what the operations share: the introduction, tags, security and the common answers and headers.
 * test/openapi.test.ts checks the document against the registered routes; `npm run check:openapi`
 * validates it.
 */
import { z } from 'zod';
import { CORE_API } from './core-api.ts';
import {
  type Answer,
  API_HEADERS,
  headerRef,
  type Json,
  type Route,
  type SharedAnswer,
} from './route-table.ts';
import { errorWithCode, internalErrorSchema, validationErrorSchema } from './schemas.ts';

/** The named schemas met while converting: `components.schemas`. */
const namedSchemas: Record<string, Json> = {};

/**
 * The JSON Schema of what a client sends or receives: zod's input side (before defaults and
 * transforms). Named schemas are collected in `namedSchemas`; `document` points the refs there.
 */
function jsonSchema(schema: z.ZodType): Json {
  const json: Json = z.toJSONSchema(schema, {
    io: 'input',
    // A custom schema (a JSON object kept as parsed) has none: its meta gives it.
    unrepresentable: ({ zodSchema }) => (zodSchema._zod.def.type === 'custom' ? {} : 'throw'),
    // The format says it; zod's regular expression for it would only repeat it at length.
    override: ({ jsonSchema }) => {
      if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
    },
  });
  Object.assign(namedSchemas, json.$defs);
  delete json.$defs;
  delete json.$schema;
  return json;
}

const responseRef = (name: SharedAnswer) => ({ $ref: `#/components/responses/${name}` });
const json = (schema: z.ZodType) => ({ 'application/json': { schema: jsonSchema(schema) } });

/** The parameters of a path or a query, from the schema that validates it; its prose moves out of the schema. */
function parameters(place: 'path' | 'query', schema: z.ZodType): Json[] {
  const { properties = {}, required = [] } = jsonSchema(schema) as {
    properties?: Record<string, Json>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, { description, ...rest }]) => ({
    name,
    in: place,
    required: required.includes(name),
    description,
    schema: rest,
  }));
}

/** A simple error answer `{ error: <code> }`. */
function simpleError(description: string, code: string): Json {
  return { description, headers: API_HEADERS, content: json(errorWithCode(code)) };
}

function response(answer: Answer | SharedAnswer): Json {
  if (typeof answer === 'string') return responseRef(answer);
  const { description, schema, media, headers = API_HEADERS } = answer;
  return { description, headers, content: { ...(schema && json(schema)), ...media } };
}

/** An operation as its route defines it; a route without a rate bucket needs no API key. */
function operation(route: Route): Json {
  const { operationId, tags, summary, description, bucket, body } = route;
  const parameterList = [
    ...(route.params ? parameters('path', route.params) : []),
    ...(route.query ? parameters('query', route.query) : []),
    ...(route.headers ?? []),
  ];
  return {
    operationId,
    tags,
    summary,
    description,
    ...(bucket ? { 'x-rate-limit-bucket': bucket } : { security: [] }),
    ...(parameterList.length > 0 && { parameters: parameterList }),
    ...(body && {
      requestBody: {
        required: body.required,
        content: { ...(body.schema && json(body.schema)), ...body.media },
      },
    }),
    responses: Object.fromEntries(
      Object.entries(route.answers).map(([status, answer]) => [status, response(answer)]),
    ),
  };
}

/** `/api/v1/holds/:id` as OpenAPI writes it: `/api/v1/holds/{id}`. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

function paths(routes: Route[]) {
  const items: Record<string, Record<string, Json>> = {};
  for (const route of routes) {
    const path = openApiPath(route.url);
    items[path] = { ...items[path], [route.method.toLowerCase()]: operation(route) };
  }
  return items;
}

const description = `REST API of the Action Approval Service. An agent submits a hold ("may I do this action?");
the workspace's rules answer at once with \`allowed\`, \`pending\` or \`denied\`; a pending hold waits for a human.

**Authentication.** Every \`/api/v1\` operation needs \`Authorization: Bearer <API key>\` (\`svc_live_…\` or
\`svc_test_…\`). A missing, malformed, unknown or revoked key gives 401 with \`WWW-Authenticate: Bearer\`.

**Rate limits.** Each operation counts against one bucket (\`x-rate-limit-bucket\`): 120 requests per fixed
60-second window per workspace and bucket by default; the operator may set another quota for the deployment
or for one workspace, and \`RateLimit-Limit\` gives the one in force. Requests without a valid key, and the public status page, share
20 requests per minute per client IP. Every \`/api/v1\` answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\`
and \`RateLimit-Reset\`; a 429 adds \`Retry-After\`. If counting fails, requests are let through.

**Bodies.** JSON only (\`Content-Type: application/json\`), at most 1 MiB (1,048,576 bytes).

**Errors.** \`{ "error": <code> }\`; validation errors add \`detail\`, \`issues\` and \`docs\`; internal errors add
\`referenceId\`. Error bodies never repeat values from the request. A known path called with another method
answers 405 \`method_not_allowed\` with an \`Allow\` header; an unknown path answers 404 \`not_found\` (under
\`/api/\`, after authentication). Every answer carries \`X-Request-Id\`.

Guide: /docs/holds. Evidence and chain verification: /docs/evidence.`;

const document = {
  openapi: '3.1.0',
  info: {
    title: 'Action Approval Service: Core API',
    version: '1',
    description,
  },
  servers: [] as { url: string }[], // the caller's `{base_url}`: openApiDocument
  security: [{ bearerAuth: [] }],
  tags: [
    { name: 'Holds', description: 'Submit an action, read its status, wait for the decision.' },
    { name: 'Audit', description: 'The per-workspace hash chain of evidence.' },
    { name: 'Reports', description: 'Oversight and activity over a period, as CSV or PDF.' },
    { name: 'Public', description: 'Pages and keys that need no API key.' },
    {
      name: 'Workspace',
      description:
        'Admin-scope keys only (`approvals keys create … --scope admin`; other keys get 403): the workspace file as `approvals export` and `apply` use it, simulations, and the hold list.',
    },
  ],
  paths: paths(CORE_API),
  components: {
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description:
          'An API key of the workspace: `svc_live_` (production) or `svc_test_` (test), followed by 43 URL-safe base64 characters. Created with `approvals keys create`.',
      },
    },
    headers: {
      'RateLimit-Limit': {
        description:
          'Requests allowed in the window: the quota per workspace and bucket (120 unless the operator set another), or 20 per client IP without a valid key.',
        schema: { type: 'integer' },
      },
      'RateLimit-Remaining': {
        description: 'Requests left in the current window.',
        schema: { type: 'integer', minimum: 0 },
      },
      'RateLimit-Reset': {
        description: 'Seconds until the current window ends.',
        schema: { type: 'integer', minimum: 1 },
      },
      'Retry-After': {
        description: 'Seconds to wait before trying again.',
        schema: { type: 'integer', minimum: 1 },
      },
      'Idempotent-Replayed': {
        description: 'Present on a replay: this answer is the body of the first request with this key.',
        schema: { type: 'string', const: 'true' },
      },
      'X-Request-Id': {
        description:
          'Id of this request, also in the server log. A caller-sent `X-Request-Id` matching `[A-Za-z0-9_.-]{1,64}` is kept; otherwise a UUID.',
        schema: { type: 'string' },
      },
    },
    responses: {
      InvalidJson: simpleError('The body is not valid JSON, or a required body is missing.', 'invalid_json'),
      Unauthorized: {
        ...simpleError('The API key is missing, malformed, unknown or revoked.', 'unauthorized'),
        headers: {
          ...API_HEADERS,
          'WWW-Authenticate': { description: '`Bearer`', schema: { type: 'string', const: 'Bearer' } },
        },
      },
      HoldLimitReached: simpleError(
        'Legacy free plan only: the monthly hold limit is used up.',
        'hold_limit_reached',
      ),
      NotFound: simpleError(
        'Unknown reference, a reference of another workspace, or a malformed reference.',
        'not_found',
      ),
      MethodNotAllowed: {
        ...simpleError('A known path called with a method it does not accept.', 'method_not_allowed'),
        headers: {
          ...API_HEADERS,
          Allow: { description: 'The methods the path accepts.', schema: { type: 'string' } },
        },
      },
      PayloadTooLarge: simpleError('The body is larger than 1 MiB.', 'payload_too_large'),
      Forbidden: simpleError('An admin route called with a key that is not of the admin scope.', 'forbidden'),
      KeyNotBound: simpleError(
        'The workspace takes holds from bound API keys only (`keys: { require_bound: true }`), and this key is not bound to an agent.',
        'key_not_bound',
      ),
      UnsupportedMediaType: simpleError(
        'The body is not sent as `application/json`.',
        'unsupported_media_type',
      ),
      ValidationFailed: {
        description:
          'The request is well-formed JSON but not valid. `detail` describes the first problem, `issues` lists all.',
        headers: API_HEADERS,
        content: json(validationErrorSchema),
      },
      RateLimited: {
        ...simpleError('Over the quota of this window.', 'rate_limited'),
        headers: { ...API_HEADERS, 'Retry-After': headerRef('Retry-After') },
      },
      Internal: {
        description: 'An unexpected failure. `referenceId` is also in the server log line of the failure.',
        headers: { 'X-Request-Id': headerRef('X-Request-Id') },
        content: json(internalErrorSchema),
      },
      Unavailable: {
        description:
          "Storage is unreachable, or the server is shutting down (`unavailable`); or the workspace's evidence chain failed the check before an append and is frozen until an operator re-anchors it (`evidence_frozen`, with `detail`; nothing was stored).",
        headers: {
          'Retry-After': {
            description: 'Sent when storage is unreachable (`5`).',
            schema: { type: 'integer' },
          },
          'X-Request-Id': headerRef('X-Request-Id'),
        },
        content: json(z.union([errorWithCode('unavailable'), errorWithCode('evidence_frozen')])),
      },
    },
    // Filled while the operations and responses above were converted.
    schemas: namedSchemas,
  },
};

/** Built once, zod's refs (`#/$defs/<id>`) pointed at the components; only `servers` differs per caller. */
const built = JSON.stringify(document).replaceAll('"#/$defs/', '"#/components/schemas/');

/** A copy of its own for each caller: validators, for one, resolve the refs in place. */
export function openApiDocument(publicUrl: string): typeof document {
  return { ...JSON.parse(built), servers: [{ url: publicUrl }] };
}
