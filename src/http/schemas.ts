/**
 * The shapes of the Core API (interface.md and decisions.md): request schemas that validate what comes
 * in, with messages that never quote a value, and the answers that go out. Their `.meta()` is the prose
 * and the examples of the OpenAPI document (openapi.ts); a schema with an `id` is one of its
 * `components.schemas`.
 */
import { z } from 'zod';
import { HOLD_REFERENCE_PATTERN } from '../domain/ids.ts';
import { holdSubmissionSchema } from '../services/hold-submission.ts';
import { ISO_INSTANT } from '../services/input.ts';
import { reportQuerySchema } from '../services/reports.ts';

// Shapes the use cases own, here too: the document's examples are checked over this module's schemas.
export { holdSubmissionSchema, reportQuerySchema };

/** As `Date.prototype.toISOString` writes it. */
const timestamp = z.iso.datetime();

// The examples are the same for every deployment: this stands for `{base_url}` in them.
const EXAMPLE_BASE_URL = 'https://approvals.example.com';
const EXAMPLE_REFERENCE = 'svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw';
const EXAMPLE_HASH = '91f2ee274ca90467346368a0ddc0faa1b2d605a49663f564edf8f28945d0b261';
const EXAMPLE_CHECKPOINT = {
  seq: 5,
  hash: EXAMPLE_HASH,
  signed_at: '2026-11-22T01:52:38.135Z',
  key_id: 'e1eae2894d70b1c5',
  signature: 'HA1Lx4wLP5VTbgh+yo3GZ7NBEDfuvbBYgC1w2zFtqi/RSy1WfaclyRQTTaNyivIk/2Qmw66HVYKItm0Zv1tQBQ==',
};

const holdReferenceSchema = z
  .string()
  .regex(HOLD_REFERENCE_PATTERN)
  .meta({
    id: 'HoldReference',
    description: '`svc_pa_` followed by at least 128 random bits, URL-safe base64.',
    examples: [EXAMPLE_REFERENCE],
  });

/** Path of /api/v1/holds/:id and /wait. */
export const holdParamsSchema = z.object({
  id: holdReferenceSchema.meta({ description: 'The hold reference. A malformed one is answered 404.' }),
});

// ---- POST /api/v1/holds

/** A hold's signed receipt (packages/sdk/src/receipt.ts; docs/holds.md, "Receipts"). */
const receiptSchema = z.string().meta({
  id: 'Receipt',
  description:
    "A compact JWS (EdDSA) the service signs for an approved or allowed hold: its reference (`sub`), workspace, the SHA-256 of the canonical action (`action_sha256`), `decision`, `approvers`, `iat` and `exp` (15 minutes after the decision). Check it with the keys at `/.well-known/approvals-receipt-keys` (the SDKs' `verifyReceipt`).",
});

export const holdCreatedSchema = z
  .object({
    id: holdReferenceSchema,
    status: z.enum(['allowed', 'pending', 'denied']).meta({
      description: 'allowed: execute now. pending: wait for the decision. denied: do not execute.',
    }),
    status_url: z.url().meta({ description: 'The public status page, `{base_url}/a/<reference>`.' }),
    receipt: receiptSchema.optional().meta({ description: '`allowed` only: the signed receipt.' }),
  })
  .meta({
    id: 'HoldCreated',
    examples: [
      { id: EXAMPLE_REFERENCE, status: 'pending', status_url: `${EXAMPLE_BASE_URL}/a/${EXAMPLE_REFERENCE}` },
    ],
  });
export type HoldCreatedBody = z.infer<typeof holdCreatedSchema>;

// ---- GET /api/v1/holds/:id and POST /api/v1/holds/:id/wait

const decisionSchema = z
  .object({
    verdict: z.enum(['approve', 'reject']),
    reason: z.string().nullable().meta({
      description: "A rule denial: the rule's reason. A human decision: the comment, or null.",
    }),
    channel: z
      .enum(['inbox', 'email', 'sms', 'slack', 'teams', 'widget', 'mcp_client', 'rule', 'agent'])
      .meta({
        description:
          '`agent`: withdrawn by its agent before a decision (its MCP client cancelled the task). ' +
          "`mcp_client`: decided by the requesting member in their own MCP client (the rule's `self_approval`).",
      }),
    decided_at: timestamp,
    changed_arguments: z.record(z.string(), z.unknown()).optional().describe('Changed: what to run.'),
  })
  .meta({ id: 'Decision' });

/** The outcome of the upstream call the proxy made; null until it has run. */
const executionSchema = z.union([
  z.object({
    status: z.literal('executed'),
    completed_at: timestamp,
    result: z.unknown().meta({ description: "The upstream's CallToolResult." }),
  }),
  z.object({
    status: z.literal('failed'),
    completed_at: timestamp,
    error: z.unknown().meta({ description: 'Why the call failed: `{ code, message }`.' }),
  }),
  z.null(),
]);

export const holdRecordSchema = z
  .object({
    id: holdReferenceSchema,
    status: z.enum(['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed']),
    created_at: timestamp,
    expires_at: timestamp.nullable().meta({
      description: 'The deadline; null when the hold never waited (allowed or denied at once).',
    }),
    tool_name: z.string(),
    connection: z.string().meta({
      description: "`SDK` for holds submitted through this API. Otherwise the MCP server's name.",
    }),
    agent_identity: z.object({ id: z.string(), label: z.string().nullable() }),
    environment: z
      .enum(['live', 'test'])
      .meta({ description: 'From the prefix of the API key that submitted the hold.' }),
    approvals: z.object({ required: z.int().min(0), received: z.int().min(0) }),
    arguments_changed: z.boolean().describe('See decision.changed_arguments.'),
    decision: decisionSchema
      .nullable()
      .meta({ description: 'Null while pending, for auto_allowed and for expired holds.' }),
    receipt: receiptSchema.optional().meta({
      description:
        'Approved and allowed holds (and their executions) whose evidence says so: the signed receipt.',
    }),
    execution: executionSchema.optional().meta({
      description:
        'Holds of the MCP proxy only (absent for holds submitted through this API): null until the service has made the upstream call.',
    }),
  })
  .meta({
    id: 'HoldRecord',
    examples: [
      {
        id: EXAMPLE_REFERENCE,
        status: 'pending',
        created_at: '2026-11-22T01:52:38.131Z',
        expires_at: '2026-11-22T05:52:38.131Z',
        tool_name: 'send_invoice',
        connection: 'SDK',
        agent_identity: { id: 'billing-bot', label: 'Billing bot' },
        environment: 'live',
        approvals: { required: 1, received: 0 },
        arguments_changed: false,
        decision: null,
      },
    ],
  });

export const waitBodySchema = z
  .object(
    {
      timeout_seconds: z
        .number('must be a number')
        .int('must be a whole number')
        .min(1, 'must be between 1 and 60')
        .max(60, 'must be between 1 and 60')
        .default(60)
        .meta({ description: 'How long to wait at most.' }),
    },
    'must be a JSON object',
  )
  .meta({ id: 'WaitRequest', examples: [{ timeout_seconds: 30 }] });

// ---- GET /api/v1/audit/verify and /checkpoints, /.well-known/approvals-audit-key

const sequenceNumber = z.coerce
  .number('must be a positive integer')
  .int('must be a positive integer')
  .min(1, 'must be a positive integer')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

export const verifyQuerySchema = z
  .object({
    from_seq: sequenceNumber.optional().meta({ description: 'First entry to check. Default 1.' }),
    to_seq: sequenceNumber.optional().meta({
      description: 'Last entry to check. Default: the newest entry. Must not be smaller than `from_seq`.',
    }),
  })
  .refine((q) => q.from_seq === undefined || q.to_seq === undefined || q.from_seq <= q.to_seq, {
    message: 'must not be smaller than from_seq',
    path: ['to_seq'],
  });

const chainHash = z.string().regex(/^[0-9a-f]{64}$/);

const chainPositionSchema = z.object({ seq: z.int().min(1), hash: chainHash }).meta({ id: 'ChainPosition' });

const checkpointSchema = z
  .object({
    seq: z.int().min(1),
    hash: chainHash,
    signed_at: timestamp,
    key_id: z.string(),
    signature: z.string().meta({ contentEncoding: 'base64' }),
  })
  .meta({
    id: 'Checkpoint',
    description:
      'The newest chain head, signed with Ed25519 over the RFC 8785 canonical JSON of `{ orgId, seq, hash, signed_at, key_id }`.',
  });

export const verifyResultSchema = z
  .object({
    valid: z.boolean(),
    checked: z.int().min(0).meta({ description: 'Entries checked and found good.' }),
    head: chainPositionSchema.nullable().meta({
      description: 'The last good entry reached (null for an empty range from seq 1).',
    }),
    first_invalid: z
      .object({
        seq: z.int().min(1),
        reason: z.enum([
          'hash_mismatch',
          'broken_link',
          'sequence_gap',
          'checkpoint_missing',
          'checkpoint_invalid',
          'truncated',
        ]),
      })
      .nullable(),
    checkpoint: checkpointSchema.nullable(),
    verified_at: timestamp,
  })
  .meta({
    id: 'VerifyResult',
    examples: [
      {
        valid: true,
        checked: 5,
        head: { seq: 5, hash: EXAMPLE_HASH },
        first_invalid: null,
        checkpoint: EXAMPLE_CHECKPOINT,
        verified_at: '2026-11-22T01:52:48.308Z',
      },
    ],
  });

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
    })
    .meta({
      description:
        'A seq (checkpoints after it) or an ISO 8601 date-time (checkpoints published from then on). Default: from the first.',
    }),
  limit: z.coerce
    .number('must be a whole number from 1 to 1000')
    .int('must be a whole number from 1 to 1000')
    .min(1, 'must be a whole number from 1 to 1000')
    .max(1000, 'must be a whole number from 1 to 1000')
    .default(100)
    .meta({
      description: 'At most this many (1 to 1000, default 100); `has_more` tells whether more follow.',
    }),
});

export const checkpointListSchema = z
  .object({
    orgId: z.string(),
    checkpoints: z.array(z.intersection(checkpointSchema, z.object({ published_at: timestamp }))),
    has_more: z.boolean(),
  })
  .meta({
    examples: [
      {
        orgId: 'org_w4e6cm5zBJwiAFFJ',
        checkpoints: [{ ...EXAMPLE_CHECKPOINT, published_at: '2026-11-22T01:52:39.002Z' }],
        has_more: false,
      },
    ],
  });
export type CheckpointListBody = z.infer<typeof checkpointListSchema>;

const publicKeySchema = z
  .object({
    key_id: z.string().meta({ description: 'Matches `checkpoint.key_id`.' }),
    algorithm: z.literal('Ed25519'),
    public_key_pem: z.string().meta({ description: 'SPKI PEM.' }),
    jwk: z.object({
      kty: z.literal('OKP'),
      crv: z.literal('Ed25519'),
      x: z.string(),
      alg: z.literal('EdDSA').optional(),
      use: z.literal('sig').optional(),
      kid: z.string().optional(),
    }),
  })
  .meta({ id: 'PublicKey' });

export const receiptKeysSchema = z
  .object({
    keys: z.array(publicKeySchema.shape.jwk).meta({ description: 'The signing key last.' }),
  })
  .meta({
    id: 'ReceiptKeys',
    description:
      "A JWK Set (RFC 7517): the Ed25519 keys whose receipts count, by `kid` (the receipt header's).",
  });

export const auditKeySchema = z
  .intersection(
    publicKeySchema,
    z.object({
      signs: z.string().meta({ description: 'What the signature covers, in words.' }),
      keys: z.array(publicKeySchema).meta({ description: 'Oldest first.' }),
    }),
  )
  .meta({
    id: 'AuditKey',
    description: 'The key that signs now (top level), and every key that ever signed (`keys`).',
  });

// ---- GET /api/v1/reports/*

// ---- GET /a/:reference

/** Path of the public status page; any string (a malformed reference gets the 404 page). */
export const statusPageParamsSchema = z.object({
  reference: z.string().meta({ description: 'The hold reference, `svc_pa_…`.' }),
});

// ---- Errors (errors.ts sends them)

const errorSchema = z
  .object({ error: z.string().meta({ description: 'The error code.' }) })
  .meta({ id: 'Error' });

/** `{ error: <code> }` with this code. */
export const errorWithCode = (code: string) =>
  z.intersection(errorSchema, z.object({ error: z.literal(code) })).meta({ examples: [{ error: code }] });

const fieldIssueSchema = z
  .object({
    field: z.string().meta({ description: 'Dotted path, for example `agent_identity.id`.' }),
    message: z.string().meta({ description: 'Never quotes the submitted value.' }),
  })
  .meta({ id: 'FieldIssue' });

export const validationErrorSchema = z
  .object({
    error: z.literal('validation_failed'),
    detail: z.string().meta({ description: 'The first issue, as `<field>: <message>`.' }),
    issues: z.array(fieldIssueSchema).min(1),
    docs: z.url().meta({ description: '`{base_url}/docs/holds`' }),
  })
  .meta({
    id: 'ValidationError',
    examples: [
      {
        error: 'validation_failed',
        detail: 'agent_identity.id: is required',
        issues: [{ field: 'agent_identity.id', message: 'is required' }],
        docs: `${EXAMPLE_BASE_URL}/docs/holds`,
      },
    ],
  });

export const internalErrorSchema = z
  .object({
    error: z.literal('internal'),
    referenceId: z.string().meta({ description: 'Quote it to support; it is in the server log.' }),
  })
  .meta({
    id: 'InternalError',
    examples: [{ error: 'internal', referenceId: '3f6c2b1e-8d4a-4c53-9f0e-2a7b5d9c1e44' }],
  });

// --- The workspace's configuration, for admin keys (issue 24) ---

/** A JSON object the document does not describe further: a workspace file, a simulation report. */
export const anyObjectSchema = z.custom<object>().meta({ type: 'object' });

export const simulateQuerySchema = z.object({
  since: z
    .string()
    .regex(/^\d{1,6}[mhd]$/, 'must look like 30d, 12h or 90m')
    .default('30d')
    .meta({ description: 'How far back the holds replayed against the draft go: `30d`, `12h`, `90m`.' }),
});

export const configAppliedSchema = z
  .object({
    applied: z.literal(true),
    webhook_secret: z
      .string()
      .optional()
      .meta({ description: 'The signing secret of a webhook declared for the first time: shown this once.' }),
    version: z.int().min(0).meta({ description: 'The configuration version after this change.' }),
    items_changed: z.array(z.string()).meta({
      description:
        'The items this change altered (`member:ann@acme.test`, `rule:…`); empty when nothing changed.',
    }),
  })
  .loose()
  .meta({
    id: 'ConfigApplied',
    description:
      'What changed, as `approvals apply` prints it with --json; a webhook declared for the first time adds its signing secret, shown this once.',
  });

export const holdListQuerySchema = z.object({
  status: z
    .enum(['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'])
    .optional()
    .meta({ description: 'Only holds with this status.' }),
  tool: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .meta({ description: 'A glob over the tool name: `payments.*`.' }),
  agent: z.string().min(1).max(200).optional().meta({ description: "The agent's id or label, exactly." }),
  before: holdReferenceSchema.optional().meta({ description: 'The next page: holds older than this one.' }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(100)
    .default(50)
    .meta({ description: 'At most this many (1–100).' }),
});

export const holdListSchema = z
  .object({
    holds: z.array(
      z.object({
        id: holdReferenceSchema,
        status: z.string(),
        created_at: timestamp,
        expires_at: timestamp.nullable(),
        tool_name: z.string(),
        connection: z.string(),
        agent_identity: z.object({ id: z.string(), label: z.string().nullable() }),
        environment: z.enum(['live', 'test']),
        approvals: z.object({ required: z.int().min(0), received: z.int().min(0) }),
        rule: z.string().nullable(),
        arguments_summary: z.string().meta({
          description: 'A short summary of the arguments; `GET /api/v1/holds/{id}` has the record.',
        }),
      }),
    ),
    next_before: holdReferenceSchema
      .nullable()
      .meta({ description: 'Pass as `before` for the next (older) page; null on the last page.' }),
  })
  .meta({ id: 'HoldList' });
