/**
 * The OpenAPI 3.1 description of what the HTTP server answers today (served at /docs/openapi.json).
 * Hand-written against src/http/** and decisions.md; keep it in step with the routes.
 */

type Json = Record<string, unknown>;

const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});
const schema = (name: string) => ref('schemas', name);
const nullable = (name: string) => ({ anyOf: [schema(name), { type: 'null' }] });
const json = (body: Json, example?: unknown) => ({
  'application/json': example === undefined ? { schema: body } : { schema: body, example },
});

/** Headers on every /api/v1 answer (the 503 of a server that is shutting down has none of the RateLimit ones). */
const apiHeaders = {
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
  'X-Request-Id': ref('headers', 'X-Request-Id'),
};

/** A simple error answer `{ error: <code> }`. */
function simpleError(description: string, code: string, headers: Json = apiHeaders): Json {
  return {
    description,
    headers,
    content: json({ allOf: [schema('Error')], properties: { error: { const: code } } }, { error: code }),
  };
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

const holdExample = {
  id: 'svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw',
  status: 'pending',
  created_at: '2026-11-22T01:52:38.131Z',
  expires_at: '2026-11-22T05:52:38.131Z',
  tool_name: 'send_invoice',
  connection: 'SDK',
  agent_identity: { id: 'billing-bot', label: 'Billing bot' },
  environment: 'live',
  approvals: { required: 1, received: 0 },
  decision: null,
};

const holdRecordResponse = (description: string) => ({
  description,
  headers: apiHeaders,
  content: json(schema('HoldRecord'), holdExample),
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

export function openApiDocument(publicUrl: string) {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Action Approval Service: Core API',
      version: '1',
      description,
    },
    servers: [{ url: publicUrl }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Holds', description: 'Submit an action, read its status, wait for the decision.' },
      { name: 'Audit', description: 'The per-workspace hash chain of evidence.' },
      { name: 'Reports', description: 'Oversight and activity over a period, as CSV or PDF.' },
      { name: 'Public', description: 'Pages and keys that need no API key.' },
    ],
    paths: {
      '/api/v1/holds': {
        post: {
          operationId: 'submitHold',
          tags: ['Holds'],
          summary: 'Submit an action',
          description:
            'The rules decide at once. 201 for a new hold. A retry with the same `idempotency_key` (same tool, agent id and arguments) answers 200 with the first body, unchanged, and `Idempotent-Replayed: true`; no second hold is made. The same key with a different action is refused with 422 on field `idempotency_key`.',
          'x-rate-limit-bucket': 'v1',
          requestBody: {
            required: true,
            content: json(schema('HoldSubmission'), {
              tool_name: 'send_invoice',
              arguments: { amount: 1200, currency: 'EUR' },
              agent_identity: { id: 'billing-bot', label: 'Billing bot' },
              context: { ticket: 'T-1042' },
              idempotency_key: 'invoice-1042',
            }),
          },
          responses: {
            '200': {
              description: 'Replay: the idempotency key was used before for the same action.',
              headers: { ...apiHeaders, 'Idempotent-Replayed': ref('headers', 'Idempotent-Replayed') },
              content: json(schema('HoldCreated')),
            },
            '201': {
              description: 'A new hold.',
              headers: apiHeaders,
              content: json(schema('HoldCreated'), {
                id: 'svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw',
                status: 'pending',
                status_url: `${publicUrl}/a/svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw`,
              }),
            },
            ...bodyErrors,
            '402': ref('responses', 'HoldLimitReached'),
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
          parameters: [ref('parameters', 'HoldId')],
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
          parameters: [ref('parameters', 'HoldId')],
          requestBody: {
            required: false,
            content: json(schema('WaitRequest'), { timeout_seconds: 30 }),
          },
          responses: {
            '200': holdRecordResponse('The hold record: decided, expired, or still pending at the timeout.'),
            ...bodyErrors,
            '404': ref('responses', 'NotFound'),
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
          parameters: [ref('parameters', 'FromSeq'), ref('parameters', 'ToSeq')],
          responses: {
            '200': {
              description: 'The result of the check.',
              headers: apiHeaders,
              content: json(schema('VerifyResult'), {
                valid: true,
                checked: 5,
                head: { seq: 5, hash: '91f2ee274ca90467346368a0ddc0faa1b2d605a49663f564edf8f28945d0b261' },
                first_invalid: null,
                checkpoint: {
                  seq: 5,
                  hash: '91f2ee274ca90467346368a0ddc0faa1b2d605a49663f564edf8f28945d0b261',
                  signed_at: '2026-11-22T01:52:38.135Z',
                  key_id: 'e1eae2894d70b1c5',
                  signature:
                    'HA1Lx4wLP5VTbgh+yo3GZ7NBEDfuvbBYgC1w2zFtqi/RSy1WfaclyRQTTaNyivIk/2Qmw66HVYKItm0Zv1tQBQ==',
                },
                verified_at: '2026-11-22T01:52:48.308Z',
              }),
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
          parameters: [
            {
              name: 'since',
              in: 'query',
              description:
                'A seq (checkpoints after it) or an ISO 8601 date-time (checkpoints published from then on). Default: from the first.',
              schema: { type: 'string' },
            },
            {
              name: 'limit',
              in: 'query',
              description:
                'At most this many (1 to 1000, default 100); `has_more` tells whether more follow.',
              schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            },
          ],
          responses: {
            '200': {
              description: 'The checkpoints and the workspace id their signatures cover.',
              headers: apiHeaders,
              content: json(
                {
                  type: 'object',
                  required: ['orgId', 'checkpoints', 'has_more'],
                  properties: {
                    orgId: { type: 'string' },
                    checkpoints: {
                      type: 'array',
                      items: {
                        allOf: [
                          schema('Checkpoint'),
                          {
                            type: 'object',
                            required: ['published_at'],
                            properties: { published_at: { type: 'string', format: 'date-time' } },
                          },
                        ],
                      },
                    },
                    has_more: { type: 'boolean' },
                  },
                },
                {
                  orgId: 'org_w4e6cm5zBJwiAFFJ',
                  checkpoints: [
                    {
                      seq: 5,
                      hash: '91f2ee274ca90467346368a0ddc0faa1b2d605a49663f564edf8f28945d0b261',
                      signed_at: '2026-11-22T01:52:38.135Z',
                      key_id: 'e1eae2894d70b1c5',
                      signature:
                        'HA1Lx4wLP5VTbgh+yo3GZ7NBEDfuvbBYgC1w2zFtqi/RSy1WfaclyRQTTaNyivIk/2Qmw66HVYKItm0Zv1tQBQ==',
                      published_at: '2026-11-22T01:52:39.002Z',
                    },
                  ],
                  has_more: false,
                },
              ),
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
              parameters: ['Format', 'From', 'To', 'Tool', 'Agent'].map((name) => ref('parameters', name)),
              responses: {
                '200': {
                  description: 'The report, as an attachment.',
                  headers: apiHeaders,
                  content: {
                    'text/csv': { schema: { type: 'string' } },
                    'application/pdf': { schema: { type: 'string', format: 'binary' } },
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
                'Cache-Control': { description: '`public, max-age=3600`', schema: { type: 'string' } },
                'X-Request-Id': ref('headers', 'X-Request-Id'),
              },
              content: json(schema('AuditKey')),
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
          parameters: [
            {
              name: 'reference',
              in: 'path',
              required: true,
              description: 'The hold reference, `svc_pa_…`.',
              schema: { type: 'string' },
            },
          ],
          responses: {
            '200': {
              description:
                'The status page. Sent with `Cache-Control: no-store` and a strict Content-Security-Policy.',
              headers: apiHeaders,
              content: { 'text/html': { schema: { type: 'string' } } },
            },
            '404': {
              description: 'No hold with this reference (HTML page).',
              headers: apiHeaders,
              content: { 'text/html': { schema: { type: 'string' } } },
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
      parameters: {
        HoldId: {
          name: 'id',
          in: 'path',
          required: true,
          description: 'The hold reference. A malformed one is answered 404.',
          schema: schema('HoldReference'),
        },
        FromSeq: {
          name: 'from_seq',
          in: 'query',
          required: false,
          description: 'First entry to check. Default 1.',
          schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
        },
        Format: {
          name: 'format',
          in: 'query',
          required: false,
          description: 'csv (default) or pdf. Without it, an Accept of application/pdf or text/csv decides.',
          schema: { type: 'string', enum: ['csv', 'pdf'] },
        },
        From: {
          name: 'from',
          in: 'query',
          required: false,
          description:
            'Start of the period (ISO 8601 date or date-time with offset), included. Default: 30 days before `to`.',
          schema: { type: 'string' },
        },
        To: {
          name: 'to',
          in: 'query',
          required: false,
          description: 'End of the period, excluded. Default: now. Must be after `from`.',
          schema: { type: 'string' },
        },
        Tool: {
          name: 'tool',
          in: 'query',
          required: false,
          description: 'Only holds of this tool name.',
          schema: { type: 'string', minLength: 1, maxLength: 200 },
        },
        Agent: {
          name: 'agent',
          in: 'query',
          required: false,
          description: 'Only holds of this agent id.',
          schema: { type: 'string', minLength: 1, maxLength: 200 },
        },
        ToSeq: {
          name: 'to_seq',
          in: 'query',
          required: false,
          description: 'Last entry to check. Default: the newest entry. Must not be smaller than `from_seq`.',
          schema: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
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
        InvalidJson: simpleError(
          'The body is not valid JSON, or a required body is missing.',
          'invalid_json',
        ),
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
        UnsupportedMediaType: simpleError(
          'The body is not sent as `application/json`.',
          'unsupported_media_type',
        ),
        ValidationFailed: {
          description:
            'The request is well-formed JSON but not valid. `detail` describes the first problem, `issues` lists all.',
          headers: apiHeaders,
          content: json(schema('ValidationError'), {
            error: 'validation_failed',
            detail: 'agent_identity.id: is required',
            issues: [{ field: 'agent_identity.id', message: 'is required' }],
            docs: `${publicUrl}/docs/holds`,
          }),
        },
        RateLimited: {
          ...simpleError('Over the quota of this window.', 'rate_limited'),
          headers: { ...apiHeaders, 'Retry-After': ref('headers', 'Retry-After') },
        },
        Internal: {
          description: 'An unexpected failure. `referenceId` is also in the server log line of the failure.',
          headers: { 'X-Request-Id': ref('headers', 'X-Request-Id') },
          content: json(schema('InternalError'), {
            error: 'internal',
            referenceId: '3f6c2b1e-8d4a-4c53-9f0e-2a7b5d9c1e44',
          }),
        },
        Unavailable: simpleError('Storage is unreachable, or the server is shutting down.', 'unavailable', {
          'Retry-After': {
            description: 'Sent when storage is unreachable (`5`).',
            schema: { type: 'integer' },
          },
          'X-Request-Id': ref('headers', 'X-Request-Id'),
        }),
      },
      schemas: {
        HoldReference: {
          type: 'string',
          pattern: '^svc_pa_[A-Za-z0-9_-]{22,64}$',
          description: '`svc_pa_` followed by at least 128 random bits, URL-safe base64.',
          examples: ['svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw'],
        },
        JsonObject: {
          type: 'object',
          description: 'A JSON object (not an array, not null), nested at most 32 levels deep.',
          additionalProperties: true,
        },
        AgentIdentity: {
          type: 'object',
          required: ['id'],
          properties: {
            id: { type: 'string', minLength: 1, maxLength: 200, description: 'Who acts.' },
            label: {
              type: ['string', 'null'],
              maxLength: 200,
              description: 'A display name. In the record: null when not given.',
            },
          },
        },
        HoldSubmission: {
          type: 'object',
          description: 'Unknown top-level fields are ignored. Lengths count UTF-16 code units.',
          required: ['tool_name', 'agent_identity', 'idempotency_key'],
          properties: {
            tool_name: {
              type: 'string',
              minLength: 1,
              maxLength: 200,
              pattern: '^[A-Za-z0-9_.:/-]+$',
              description: 'Business name of the action. Its first use registers the tool as `new`.',
            },
            arguments: {
              ...schema('JsonObject'),
              description: 'Parameters of the action; kept in evidence. Default `{}`.',
            },
            agent_identity: schema('AgentIdentity'),
            context: {
              ...schema('JsonObject'),
              description: 'Extra information for the approver; kept in evidence. Default `{}`.',
            },
            idempotency_key: {
              type: 'string',
              minLength: 1,
              maxLength: 255,
              description: 'Unique per logical action, per workspace.',
            },
          },
        },
        HoldCreated: {
          type: 'object',
          required: ['id', 'status', 'status_url'],
          properties: {
            id: schema('HoldReference'),
            status: {
              type: 'string',
              enum: ['allowed', 'pending', 'denied'],
              description: 'allowed: execute now. pending: wait for the decision. denied: do not execute.',
            },
            status_url: {
              type: 'string',
              format: 'uri',
              description: 'The public status page, `{base_url}/a/<reference>`.',
            },
          },
        },
        Decision: {
          type: 'object',
          required: ['verdict', 'reason', 'channel', 'decided_at'],
          properties: {
            verdict: { type: 'string', enum: ['approve', 'reject'] },
            reason: {
              type: ['string', 'null'],
              description: "A rule denial: the rule's reason. A human decision: the comment, or null.",
            },
            channel: { type: 'string', enum: ['inbox', 'email', 'sms', 'slack', 'widget', 'rule'] },
            decided_at: { type: 'string', format: 'date-time' },
          },
        },
        HoldRecord: {
          type: 'object',
          required: [
            'id',
            'status',
            'created_at',
            'expires_at',
            'tool_name',
            'connection',
            'agent_identity',
            'environment',
            'approvals',
            'decision',
          ],
          properties: {
            id: schema('HoldReference'),
            status: {
              type: 'string',
              enum: ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'],
            },
            created_at: { type: 'string', format: 'date-time' },
            expires_at: {
              type: ['string', 'null'],
              format: 'date-time',
              description: 'The deadline; null when the hold never waited (allowed or denied at once).',
            },
            tool_name: { type: 'string' },
            connection: { type: 'string', description: '`SDK` for holds submitted through this API.' },
            agent_identity: {
              type: 'object',
              required: ['id', 'label'],
              properties: { id: { type: 'string' }, label: { type: ['string', 'null'] } },
            },
            environment: {
              type: 'string',
              enum: ['live', 'test'],
              description: 'From the prefix of the API key that submitted the hold.',
            },
            approvals: {
              type: 'object',
              required: ['required', 'received'],
              properties: {
                required: { type: 'integer', minimum: 0 },
                received: { type: 'integer', minimum: 0 },
              },
            },
            decision: {
              ...nullable('Decision'),
              description: 'Null while pending, for auto_allowed and for expired holds.',
            },
          },
        },
        WaitRequest: {
          type: 'object',
          properties: {
            timeout_seconds: {
              type: 'integer',
              minimum: 1,
              maximum: 60,
              default: 60,
              description: 'How long to wait at most.',
            },
          },
        },
        ChainPosition: {
          type: 'object',
          required: ['seq', 'hash'],
          properties: {
            seq: { type: 'integer', minimum: 1 },
            hash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          },
        },
        Checkpoint: {
          type: 'object',
          description:
            'The newest chain head, signed with Ed25519 over the RFC 8785 canonical JSON of `{ orgId, seq, hash, signed_at, key_id }`.',
          required: ['seq', 'hash', 'signed_at', 'key_id', 'signature'],
          properties: {
            seq: { type: 'integer', minimum: 1 },
            hash: { type: 'string', pattern: '^[0-9a-f]{64}$' },
            signed_at: { type: 'string', format: 'date-time' },
            key_id: { type: 'string' },
            signature: { type: 'string', contentEncoding: 'base64' },
          },
        },
        VerifyResult: {
          type: 'object',
          required: ['valid', 'checked', 'head', 'first_invalid', 'checkpoint', 'verified_at'],
          properties: {
            valid: { type: 'boolean' },
            checked: { type: 'integer', minimum: 0, description: 'Entries checked and found good.' },
            head: {
              ...nullable('ChainPosition'),
              description: 'The last good entry reached (null for an empty range from seq 1).',
            },
            first_invalid: {
              anyOf: [
                {
                  type: 'object',
                  required: ['seq', 'reason'],
                  properties: {
                    seq: { type: 'integer', minimum: 1 },
                    reason: {
                      type: 'string',
                      enum: [
                        'hash_mismatch',
                        'broken_link',
                        'sequence_gap',
                        'checkpoint_missing',
                        'checkpoint_invalid',
                        'truncated',
                      ],
                    },
                  },
                },
                { type: 'null' },
              ],
            },
            checkpoint: nullable('Checkpoint'),
            verified_at: { type: 'string', format: 'date-time' },
          },
        },
        PublicKey: {
          type: 'object',
          required: ['key_id', 'algorithm', 'public_key_pem', 'jwk'],
          properties: {
            key_id: { type: 'string', description: 'Matches `checkpoint.key_id`.' },
            algorithm: { type: 'string', const: 'Ed25519' },
            public_key_pem: { type: 'string', description: 'SPKI PEM.' },
            jwk: {
              type: 'object',
              required: ['kty', 'crv', 'x'],
              properties: {
                kty: { const: 'OKP' },
                crv: { const: 'Ed25519' },
                x: { type: 'string' },
                alg: { const: 'EdDSA' },
                use: { const: 'sig' },
                kid: { type: 'string' },
              },
            },
          },
        },
        AuditKey: {
          description: 'The key that signs now (top level), and every key that ever signed (`keys`).',
          allOf: [
            schema('PublicKey'),
            {
              type: 'object',
              required: ['signs', 'keys'],
              properties: {
                signs: { type: 'string', description: 'What the signature covers, in words.' },
                keys: { type: 'array', items: schema('PublicKey'), description: 'Oldest first.' },
              },
            },
          ],
        },
        Error: {
          type: 'object',
          required: ['error'],
          properties: { error: { type: 'string', description: 'The error code.' } },
        },
        FieldIssue: {
          type: 'object',
          required: ['field', 'message'],
          properties: {
            field: { type: 'string', description: 'Dotted path, for example `agent_identity.id`.' },
            message: { type: 'string', description: 'Never quotes the submitted value.' },
          },
        },
        ValidationError: {
          type: 'object',
          required: ['error', 'detail', 'issues', 'docs'],
          properties: {
            error: { const: 'validation_failed' },
            detail: { type: 'string', description: 'The first issue, as `<field>: <message>`.' },
            issues: { type: 'array', minItems: 1, items: schema('FieldIssue') },
            docs: { type: 'string', format: 'uri', description: '`{base_url}/docs/holds`' },
          },
        },
        InternalError: {
          type: 'object',
          required: ['error', 'referenceId'],
          properties: {
            error: { const: 'internal' },
            referenceId: { type: 'string', description: 'Quote it to support; it is in the server log.' },
          },
        },
      },
    },
  };
}
