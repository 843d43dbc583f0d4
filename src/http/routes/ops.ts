/** /healthz (process up), /readyz (storage reachable), /metrics (Prometheus). */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { storageReachable } from '../../services/health.ts';
import { sendError } from '../errors.ts';
import type { Metrics } from '../metrics.ts';

export function opsRoutes(app: FastifyInstance, { ctx, metrics }: { ctx: ServiceContext; metrics: Metrics }) {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (request, reply) => {
    try {
      await storageReachable(ctx);
      return { status: 'ok' };
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
