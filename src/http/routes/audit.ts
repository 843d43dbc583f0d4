/** GET /api/v1/audit/verify, the published checkpoints, and the public keys that check them. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { listCheckpoints } from '../../services/publish-checkpoints.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { fieldIssues, sendValidationError } from '../../web/errors.ts';
import { type CheckpointListBody, checkpointsQuerySchema, verifyQuerySchema } from '../schemas.ts';

export function auditRoutes(
  app: FastifyInstance,
  { ctx, docsUrl }: { ctx: ServiceContext; docsUrl: () => string },
) {
  app.get('/api/v1/audit/verify', { config: { bucket: 'v1-verify' } }, async (request, reply) => {
    const parsed = verifyQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationError(reply, docsUrl(), fieldIssues(parsed.error));
    return verifyChain(ctx, request.caller!.workspace.id, {
      fromSeq: parsed.data.from_seq,
      toSeq: parsed.data.to_seq,
    });
  });

  app.get('/api/v1/audit/checkpoints', { config: { bucket: 'v1-verify' } }, async (request, reply) => {
    const parsed = checkpointsQuerySchema.safeParse(request.query);
    if (!parsed.success) return sendValidationError(reply, docsUrl(), fieldIssues(parsed.error));
    const list: CheckpointListBody = await listCheckpoints(ctx, request.caller!.workspace.id, parsed.data);
    return list;
  });

  app.get('/.well-known/approvals-audit-key', async (_request, reply) => {
    reply.header('Cache-Control', 'public, max-age=300');
    const keys = await ctx.signer.published();
    return {
      ...keys.at(-1)!,
      signs: 'RFC 8785 canonical JSON of { orgId, seq, hash, signed_at, key_id }; signature in base64',
      keys,
    };
  });
}
