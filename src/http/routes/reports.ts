/** GET /api/v1/reports/oversight and /activity, as CSV (streamed) or PDF. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import { sendReport } from '../../web/report-download.ts';

export function reportRoutes(
  app: FastifyInstance,
  { ctx, docsUrl }: { ctx: ServiceContext; docsUrl: () => string },
) {
  for (const kind of ['oversight', 'activity'] as const) {
    app.get(`/api/v1/reports/${kind}`, { config: { bucket: 'v1-reports' } }, (request, reply) =>
      sendReport(ctx, request, reply, request.caller!.workspace, kind, docsUrl()),
    );
  }
}
