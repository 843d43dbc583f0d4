/** The Core API (`/api/v1`) and the service's own pages: status pages, docs, widget and channel callbacks. */
import type { FastifyInstance } from 'fastify';
import { CORE_API } from './core-api.ts';
import { type ApiEnv, registerRoutes } from './route-table.ts';
import { channelRoutes } from './routes/channels.ts';
import { docsRoutes } from './routes/docs.ts';
import { widgetRoutes } from './routes/widget.ts';

export function apiRoutes(app: FastifyInstance, env: ApiEnv) {
  const { ctx, counter } = env;
  registerRoutes(app, CORE_API, env);
  void app.register(widgetRoutes, { ctx, counter });
  void app.register(channelRoutes, { ctx });
  docsRoutes(app, { ctx });
}
