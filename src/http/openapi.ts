/**
 * The OpenAPI 3.1 document of the Core API and the public pages beside it, served at /docs/openapi.json.
 * Bodies, parameters and their prose and examples come from the zod schemas of schemas.ts, the ones that
 * validate the requests and describe the answers; this file says which operation takes and answers
 * which, with its status codes, headers and prose. test/openapi.test.ts fails when a registered route is
 * not documented here or a documented one does not exist; `npm run check:openapi` validates the document.
 */
import { z } from 'zod';
import {
  auditKeySchema,
  checkpointListSchema,
  checkpointsQuerySchema,
  errorWithCode,
  holdCreatedSchema,
  holdParamsSchema,
  holdRecordSchema,
  holdSubmissionSchema,
  configAppliedSchema,
  holdListQuerySchema,
  holdListSchema,
  simulateQuerySchema,
  internalErrorSchema,
  reportQuerySchema,
  statusPageParamsSchema,
  validationErrorSchema,
  verifyQuerySchema,
  verifyResultSchema,
  waitBodySchema,
} from './schemas.ts';

type Json = Record<string, unknown>;

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

const ref = (kind: 'responses' | 'headers', name: string) => ({ $ref: `#/components/${kind}/${name}` });
const json = (schema: z.ZodType) => ({ 'application/json': { schema: jsonSchema(schema) } });
const text = (type: string, schema: Json = { type: 'string' }) => ({ [type]: { schema } });

/** The parameters of a path or a query, from the schema that validates it; its prose moves out of the schema. */
function parameters(place: 'path' | 'query', schema: z.ZodObject): Json[] {
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

/** Headers on every /api/v1 answer (the 503 of a server that is shutting down has none of the RateLimit ones). */
const apiHeaders = {
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
  'X-Request-Id': ref('headers', 'X-Request-Id'),
};

/** A simple error answer `{ error: <code> }`. */
function simpleError(description: string, code: string, headers: Json = apiHeaders): Json {
  return { description, headers, content: json(errorWithCode(code)) };
}

const commonErrors = {
  '401': ref('responses', 'Unauthorized'),
  '429': ref('responses', 'RateLimited'),
  '500': ref('responses', 'Internal'),
  '503': ref('responses', 'Unavailable'),
};

const bodyErrors = {
  '400': ref('responses', 'InvalidJson'),
  '413': ref('responses', 'PayloadTooLarge'),
  '415': ref('responses', 'UnsupportedMediaType'),
};

const holdRecordResponse = (description: string) => ({
  description,
  headers: apiHeaders,
  content: json(holdRecordSchema),
});

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
  paths: {
    '/api/v1/holds': {
      post: {
        operationId: 'submitHold',
        tags: ['Holds'],
        summary: 'Submit an action',
        description:
          'The rules decide at once. 201 for a new hold. A retry with the same `idempotency_key` (same tool, agent id and arguments) answers 200 with the first body, unchanged, and `Idempotent-Replayed: true`; no second hold is made. The same key with a different action is refused with 422 on field `idempotency_key`. A key bound to an agent (`approvals keys create --agent`) submits for that agent only: another `agent_identity.id` is refused with 422 on that field.',
        'x-rate-limit-bucket': 'v1',
        requestBody: { required: true, content: json(holdSubmissionSchema) },
        responses: {
          '200': {
            description: 'Replay: the idempotency key was used before for the same action.',
            headers: { ...apiHeaders, 'Idempotent-Replayed': ref('headers', 'Idempotent-Replayed') },
            content: json(holdCreatedSchema),
          },
          '201': { description: 'A new hold.', headers: apiHeaders, content: json(holdCreatedSchema) },
          ...bodyErrors,
          '402': ref('responses', 'HoldLimitReached'),
          '403': ref('responses', 'KeyNotBound'),
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/holds/{id}': {
      get: {
        operationId: 'getHold',
        tags: ['Holds'],
        summary: 'Read a hold once',
        description:
          'A pending hold found past its deadline is expired before it is answered. A reference of another workspace is answered like an unknown one.',
        'x-rate-limit-bucket': 'v1',
        parameters: parameters('path', holdParamsSchema),
        responses: {
          '200': holdRecordResponse('The hold record.'),
          '404': ref('responses', 'NotFound'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/holds/{id}/wait': {
      post: {
        operationId: 'waitForHold',
        tags: ['Holds'],
        summary: 'Long-poll for the decision',
        description:
          'Answers as soon as the hold is no longer `pending`, at its deadline (then `expired`), or after `timeout_seconds` (default 60) with the current record, which may still be `pending`; then call again. A server that shuts down answers open waits at once with the current record. The body is optional: no body and no Content-Type is valid.',
        'x-rate-limit-bucket': 'v1-wait',
        parameters: parameters('path', holdParamsSchema),
        requestBody: { required: false, content: json(waitBodySchema) },
        responses: {
          '200': holdRecordResponse('The hold record: decided, expired, or still pending at the timeout.'),
          ...bodyErrors,
          '404': ref('responses', 'NotFound'),
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/workspace/config': {
      get: {
        operationId: 'exportConfig',
        tags: ['Workspace'],
        summary: "Export the workspace's configuration",
        description:
          'The workspace file `approvals export` prints: JSON, or YAML with `Accept: application/yaml`. `ETag` and `Config-Version` give its version; send it back as `If-Match` to apply only if nothing changed since.',
        'x-rate-limit-bucket': 'v1',
        responses: {
          '200': {
            description: 'The workspace file.',
            headers: {
              ...apiHeaders,
              ETag: { schema: { type: 'string' } },
              'Config-Version': { schema: { type: 'integer' } },
            },
            content: { 'application/json': { schema: { type: 'object' } }, ...text('application/yaml') },
          },
          '403': ref('responses', 'Forbidden'),
          ...commonErrors,
        },
      },
      put: {
        operationId: 'applyConfig',
        tags: ['Workspace'],
        summary: 'Apply a workspace file',
        description:
          'What `approvals apply -f` does: the file (YAML or JSON) replaces what it declares, with the same validation (422 names the field and, for YAML, the line) and the same evidence (`config.applied`, changed by this key). With `If-Match: "<version>"`, only if the configuration is still at that version: otherwise 409 `conflict` with `detail` naming what changed, by whom and when.',
        'x-rate-limit-bucket': 'v1',
        parameters: [{ name: 'If-Match', in: 'header', required: false, schema: { type: 'string' } }],
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object' } }, ...text('application/yaml') },
        },
        responses: {
          '200': { description: 'Applied.', headers: apiHeaders, content: json(configAppliedSchema) },
          ...bodyErrors,
          '403': ref('responses', 'Forbidden'),
          '409': simpleError(
            'The configuration changed since the `If-Match` version; `detail` says how.',
            'conflict',
          ),
          '412': simpleError('`If-Match` is not a version.', 'precondition_failed'),
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/workspace/holds': {
      get: {
        operationId: 'listHolds',
        tags: ['Workspace'],
        summary: "List the workspace's holds, newest first",
        description: 'Admin-scope keys only. Page with `before` (the `next_before` of the previous page).',
        'x-rate-limit-bucket': 'v1',
        parameters: parameters('query', holdListQuerySchema),
        responses: {
          '200': { description: 'A page of holds.', headers: apiHeaders, content: json(holdListSchema) },
          '403': ref('responses', 'Forbidden'),
          '404': ref('responses', 'NotFound'),
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/workspace/simulate': {
      post: {
        operationId: 'simulatePolicy',
        tags: ['Workspace'],
        summary: 'Replay past holds against a draft',
        description:
          'What `approvals simulate` does: the holds of the period decided again by the draft workspace file (YAML or JSON), nothing stored.',
        'x-rate-limit-bucket': 'v1',
        parameters: parameters('query', simulateQuerySchema),
        requestBody: {
          required: true,
          content: { 'application/json': { schema: { type: 'object' } }, ...text('application/yaml') },
        },
        responses: {
          '200': {
            description: 'The report.',
            headers: apiHeaders,
            content: { 'application/json': { schema: { type: 'object' } } },
          },
          ...bodyErrors,
          '403': ref('responses', 'Forbidden'),
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/audit/verify': {
      get: {
        operationId: 'verifyChain',
        tags: ['Audit'],
        summary: 'Verify the hash chain of the workspace',
        description:
          "Recomputes every entry hash in the range, checks every link, and compares the chain with its signed checkpoints (the head's and the newest published one): entries no trusted checkpoint covers, a checkpoint not signed by a trusted key or not in the chain, and entries cut off after one make it invalid. Answers 200 whether the chain is intact or not; `valid` tells.",
        'x-rate-limit-bucket': 'v1-verify',
        parameters: parameters('query', verifyQuerySchema),
        responses: {
          '200': {
            description: 'The result of the check.',
            headers: apiHeaders,
            content: json(verifyResultSchema),
          },
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    '/api/v1/audit/checkpoints': {
      get: {
        operationId: 'listCheckpoints',
        tags: ['Audit'],
        summary: 'Signed chain heads published outside the database, oldest first',
        description:
          "The service publishes the signed head of a chain that moved, at most once a minute, after checking the entries since the last one (also sent as the `evidence.checkpoint` webhook event). Keep them elsewhere: an export or a later chain must hold each one's `seq` with the same `hash`.",
        'x-rate-limit-bucket': 'v1-verify',
        parameters: parameters('query', checkpointsQuerySchema),
        responses: {
          '200': {
            description: 'The checkpoints and the workspace id their signatures cover.',
            headers: apiHeaders,
            content: json(checkpointListSchema),
          },
          '422': ref('responses', 'ValidationFailed'),
          ...commonErrors,
        },
      },
    },
    ...Object.fromEntries(
      (['oversight', 'activity'] as const).map((kind) => [
        `/api/v1/reports/${kind}`,
        {
          get: {
            operationId: `${kind}Report`,
            tags: ['Reports'],
            summary:
              kind === 'oversight'
                ? 'How holds were decided in a period: outcomes, rule against people, channels, times, expiries, four-eyes, per tool and approver'
                : 'One row per hold of a period: reference, times, tool, agent, status, decision, approvers, execution',
            description:
              'CSV (RFC 4180, UTF-8, streamed; formula-like cells prefixed with an apostrophe) or PDF. `format` wins over `Accept`. The report names the evidence chain head it was built from.',
            'x-rate-limit-bucket': 'v1-reports',
            parameters: parameters('query', reportQuerySchema),
            responses: {
              '200': {
                description: 'The report, as an attachment.',
                headers: apiHeaders,
                content: {
                  ...text('text/csv'),
                  ...text('application/pdf', { type: 'string', format: 'binary' }),
                },
              },
              '422': ref('responses', 'ValidationFailed'),
              ...commonErrors,
            },
          },
        },
      ]),
    ),
    '/.well-known/approvals-audit-key': {
      get: {
        operationId: 'getAuditKey',
        tags: ['Public', 'Audit'],
        summary: 'The public keys trusted to sign chain checkpoints',
        security: [],
        responses: {
          '200': {
            description: 'The current Ed25519 public key.',
            headers: {
              'Cache-Control': { description: '`public, max-age=300`', schema: { type: 'string' } },
              'X-Request-Id': ref('headers', 'X-Request-Id'),
            },
            content: json(auditKeySchema),
          },
          '500': ref('responses', 'Internal'),
          '503': ref('responses', 'Unavailable'),
        },
      },
    },
    '/a/{reference}': {
      get: {
        operationId: 'statusPage',
        tags: ['Public'],
        summary: 'Public status page of a hold (HTML)',
        description:
          'Shows the status, the reference, when it was requested, decided, and its deadline (pending or expired), with the workspace name and branding. Never the tool, arguments or agent. Limited to 20 requests per minute per client IP. Unknown and malformed references get the same 404 page.',
        security: [],
        parameters: parameters('path', statusPageParamsSchema),
        responses: {
          '200': {
            description:
              'The status page. Sent with `Cache-Control: no-store` and a strict Content-Security-Policy.',
            headers: apiHeaders,
            content: text('text/html'),
          },
          '404': {
            description: 'No hold with this reference (HTML page).',
            headers: apiHeaders,
            content: text('text/html'),
          },
          '429': ref('responses', 'RateLimited'),
          '500': ref('responses', 'Internal'),
          '503': ref('responses', 'Unavailable'),
        },
      },
    },
  },
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
          ...apiHeaders,
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
          ...apiHeaders,
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
        headers: apiHeaders,
        content: json(validationErrorSchema),
      },
      RateLimited: {
        ...simpleError('Over the quota of this window.', 'rate_limited'),
        headers: { ...apiHeaders, 'Retry-After': ref('headers', 'Retry-After') },
      },
      Internal: {
        description: 'An unexpected failure. `referenceId` is also in the server log line of the failure.',
        headers: { 'X-Request-Id': ref('headers', 'X-Request-Id') },
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
          'X-Request-Id': ref('headers', 'X-Request-Id'),
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
