/** GET /api/v1/audit/verify, the published checkpoints, and the public keys that check them. */
import type { z } from 'zod';
import { listCheckpoints } from '../../services/publish-checkpoints.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { COMMON_ERRORS, defineRoute, headerRef } from '../route-table.ts';
import {
  auditKeySchema,
  checkpointListSchema,
  checkpointsQuerySchema,
  verifyQuerySchema,
  verifyResultSchema,
} from '../schemas.ts';

const verify = defineRoute({
  method: 'GET',
  url: '/api/v1/audit/verify',
  bucket: 'v1-verify',
  operationId: 'verifyChain',
  tags: ['Audit'],
  summary: 'Verify the hash chain of the workspace',
  description:
    "Recomputes every entry hash in the range, checks every link, and compares the chain with its signed checkpoints (the head's and the newest published one): entries no trusted checkpoint covers, a checkpoint not signed by a trusted key or not in the chain, and entries cut off after one make it invalid. Answers 200 whether the chain is intact or not; `valid` tells.",
  query: verifyQuerySchema,
  answers: {
    200: { description: 'The result of the check.', schema: verifyResultSchema },
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ query, request, answer }, { ctx }) => {
    const range = { fromSeq: query.from_seq, toSeq: query.to_seq };
    const result = await verifyChain(ctx, request.caller!.workspace.id, range);
    // Its type allows `rewritten`, which comes only from a kept checkpoint (the CLI's), never passed here.
    return answer(200, result as z.input<typeof verifyResultSchema>);
  },
});

const checkpoints = defineRoute({
  method: 'GET',
  url: '/api/v1/audit/checkpoints',
  bucket: 'v1-verify',
  operationId: 'listCheckpoints',
  tags: ['Audit'],
  summary: 'Signed chain heads published outside the database, oldest first',
  description:
    "The service publishes the signed head of a chain that moved, at most once a minute, after checking the entries since the last one (also sent as the `evidence.checkpoint` webhook event). Keep them elsewhere: an export or a later chain must hold each one's `seq` with the same `hash`.",
  query: checkpointsQuerySchema,
  answers: {
    200: {
      description: 'The checkpoints and the workspace id their signatures cover.',
      schema: checkpointListSchema,
    },
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ query, request, answer }, { ctx }) =>
    answer(200, await listCheckpoints(ctx, request.caller!.workspace.id, query)),
});

export const auditKeyRoute = defineRoute({
  method: 'GET',
  url: '/.well-known/approvals-audit-key',
  operationId: 'getAuditKey',
  tags: ['Public', 'Audit'],
  summary: 'The public keys trusted to sign chain checkpoints',
  answers: {
    200: {
      description: 'The current Ed25519 public key.',
      headers: {
        'Cache-Control': { description: '`public, max-age=300`', schema: { type: 'string' } },
        'X-Request-Id': headerRef('X-Request-Id'),
      },
      schema: auditKeySchema,
    },
    500: 'Internal',
    503: 'Unavailable',
  },
  handler: async ({ answer }, { ctx }) => {
    const keys = await ctx.signer.published();
    // PublishedKey types its JWK loosely (audit-signer.ts); Node exports an Ed25519 key as OKP, Ed25519, x.
    const body = {
      ...keys.at(-1)!,
      signs: 'RFC 8785 canonical JSON of { orgId, seq, hash, signed_at, key_id }; signature in base64',
      keys,
    } as z.input<typeof auditKeySchema>;
    return answer(200, body, { 'Cache-Control': 'public, max-age=300' });
  },
});

export const auditRoutes = [verify, checkpoints];
