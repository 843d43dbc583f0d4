/** The Core API (`/api/v1`) and the service's own pages: status pages, docs, widget and channel callbacks. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import type { Metrics } from '../web/metrics.ts';
import type { RateCounter } from '../web/rate-limiter.ts';
import { auditRoutes } from './routes/audit.ts';
import { channelRoutes } from './routes/channels.ts';
import { docsRoutes } from './routes/docs.ts';
import { holdRoutes } from './routes/holds.ts';
import { reportRoutes } from './routes/reports.ts';
import { statusPageRoutes } from './routes/status-page.ts';
import { widgetRoutes } from './routes/widget.ts';
import { workspaceConfigRoutes } from './routes/workspace-config.ts';

export interface ApiOptions {
  ctx: ServiceContext;
  metrics: Metrics;
  counter: RateCounter;
}

export function apiRoutes(app: FastifyInstance, { ctx, metrics, counter }: ApiOptions) {
  const docsUrl = () => `${ctx.publicUrl}/docs/holds`;
  holdRoutes(app, { ctx, docsUrl, onSubmitted: (status) => metrics.holdsSubmitted.labels(status).inc() });
  void app.register(widgetRoutes, { ctx, counter });
  void app.register(channelRoutes, { ctx });
  auditRoutes(app, { ctx, docsUrl });
  workspaceConfigRoutes(app, { ctx, docsUrl });
  reportRoutes(app, { ctx, docsUrl });
  statusPageRoutes(app, { ctx, counter });
  docsRoutes(app, { ctx });
}
