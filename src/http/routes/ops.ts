/** /healthz (process up), /readyz (storage reachable; frozen evidence chains named), /metrics (Prometheus). */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { frozenWorkspaces } from '../../services/chain-guard.ts';
import { storageReachable } from '../../services/health.ts';
import { sendError } from '../../web/errors.ts';
import type { Metrics } from '../../web/metrics.ts';

export function opsRoutes(app: FastifyInstance, { ctx, metrics }: { ctx: ServiceContext; metrics: Metrics }) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    try {
      await storageReachable(ctx);
      // Ready all the same: a frozen chain stops its own workspace's writes, not the others'.
      const frozen = await frozenWorkspaces(ctx);
      return frozen.length ? { status: 'ok', evidence_frozen: frozen } : { status: 'ok' };
    } catch (error) {
      request.log.warn({ errorName: (error as Error).name }, 'storage not reachable');
      return sendError(reply, 503, 'unavailable');
    }
  });

  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });
}
