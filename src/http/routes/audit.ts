/** GET /api/v1/audit/verify and the public key that checks its checkpoints. */
import type { FastifyInstance } from 'fastify';
import { publishedKeys } from '../../services/audit-signer.ts';
import type { ServiceContext } from '../../services/context.ts';
import { verifyChain } from '../../services/verify-chain.ts';
import { fieldIssues, sendValidationError } from '../errors.ts';
import { verifyQuerySchema } from '../schemas.ts';

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

  app.get('/.well-known/approvals-audit-key', async (_request, reply) => {
    reply.header('Cache-Control', 'public, max-age=300');
    const keys = await publishedKeys(ctx.db);
    const current = keys.find((key) => key.key_id === ctx.signer.keyId)!;
    return {
      ...current,
      signs: 'RFC 8785 canonical JSON of { orgId, seq, hash, signed_at, key_id }; signature in base64',
      keys,
    };
  });
}
