/** The composition root: settings → storage → services → HTTP server and workers, and a graceful stop. */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { openContext } from './open-context.ts';
import { createMetrics } from './web/metrics.ts';
import { MemoryRateCounter, SharedRateCounter } from './web/rate-limiter.ts';
import { connectRedisRateCounter } from './web/redis-rate-counter.ts';
import { apiRoutes } from './http/api.ts';
import { opsRoutes } from './http/routes/ops.ts';
import { appPlugin } from './app/plugin.ts';
import { testMcpConnection } from './mcp/connection-test.ts';
import { mcpRoutes } from './mcp/endpoint.ts';
import { oauthServer } from './oauth/server.ts';
import { buildWebServer } from './web/server.ts';
import { checkSharedSlackChannel } from './services/workspaces.ts';
import type { ServiceContext } from './services/context.ts';
import { frozenWorkspaces } from './services/chain-guard.ts';
import { describeSafely } from './services/errors.ts';
import { recordPublicUrl } from './services/public-url.ts';
import { shareEvents } from './store/postgres-events.ts';
import { startCheckpointWorker } from './workers/checkpoints.ts';
import { startDeadlineWorker } from './workers/deadlines.ts';
import { startExecutionWorker } from './workers/executions.ts';
import { startWebhookWorker } from './workers/webhooks.ts';
import { startNotificationWorker } from './workers/notifications.ts';
import { UpstreamPool } from './mcp/upstream.ts';
import { McpRelay } from './mcp/relay.ts';
import { startTracing, traceRequests } from './telemetry/tracing.ts';

export interface RunningService {
  ctx: ServiceContext;
  app: FastifyInstance;
  url: string;
  /**
   * Runs a round of every worker now, one after the other (deadlines first: what they expire, the
   * others send), and resolves when each has finished with the work it started. Tests call it when
   * they move the clock, and to know that nothing more is on its way.
   */
  runWorkers(): Promise<void>;
  stop(): Promise<void>;
}

export async function startService(
  config: Config,
  options: { now?: () => number } = {},
): Promise<RunningService> {
  startTracing();
  const ctx = await openContext(config, options.now);
  await checkSharedSlackChannel(ctx).catch(async (error: unknown) => {
    await ctx.db.close();
    throw error;
  });
  const metrics = createMetrics(
    () => ctx.holdEvents.waiting,
    async () => (await frozenWorkspaces(ctx)).length,
  );
  const lifecycle = { closing: false };
  const upstreams = new UpstreamPool({ sealer: ctx.sealer, allowPrivate: ctx.allowPrivateTargets });
  const mcpRelay = new McpRelay();
  const redis = await openRedis(config, ctx);
  // Several instances count the same windows: in Redis when given, else in PostgreSQL. SQLite is one process.
  const counter =
    redis ?? (ctx.db.dialect === 'postgres' ? new SharedRateCounter(ctx) : new MemoryRateCounter());
  const app = buildWebServer({
    lifecycle,
    ctx,
    metrics,
    counter,
    log: { level: config.logLevel, format: config.logFormat },
    trustProxy: config.trustProxy,
    // The transports side by side; an instance that runs the workers alone answers operations only.
    mount: (app) => {
      traceRequests(app);
      opsRoutes(app, { ctx, metrics });
      if (config.role === 'workers') return;
      apiRoutes(app, { ctx, metrics, counter });
      const oauth = oauthServer(app, ctx, counter);
      void app.register(appPlugin, { ctx, counter, testMcpConnection, oauth });
      mcpRoutes(app, { ctx, counter, upstreams, relay: mcpRelay });
    },
  });
  if (redis) redis.log = app.log;
  logTroubleTo(app.log, config, ctx);
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await redis?.close();
    await ctx.db.close();
    throw error;
  }
  const port = await addressOf(app, config, ctx);
  const shared =
    ctx.db.dialect === 'postgres'
      ? await shareEvents(config.databaseUrl!, { holds: ctx.holdEvents, mcp: mcpRelay }, app.log)
      : null;
  const workers = config.role === 'api' ? [] : startWorkers(ctx, upstreams, config, app.log, metrics);

  let stopping: Promise<void> | undefined;
  return {
    ctx,
    app,
    url: `http://127.0.0.1:${port}`,
    async runWorkers() {
      for (const worker of workers) await worker.settle();
    },
    stop: () => {
      // Waiters answer with the current record, requests in flight finish, then storage closes.
      stopping ??= (async () => {
        lifecycle.closing = true;
        await Promise.all(workers.map((worker) => worker.stop()));
        await shared?.close();
        await redis?.close();
        ctx.holdEvents.close();
        await app.close();
        await ctx.executions.close();
        await upstreams.close();
        ctx.mailer?.close();
        ctx.chainGuard.flush();
        await ctx.db.close();
      })();
      return stopping;
    },
  };
}

/**
 * The port it listens on, and the address people open: PUBLIC_URL or that port, recorded for the
 * command line on the same storage (its links must reach this service).
 */
async function addressOf(app: FastifyInstance, config: Config, ctx: ServiceContext): Promise<number> {
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (!config.publicUrl) ctx.publicUrl = `http://127.0.0.1:${port}`;
  if (config.role !== 'workers') await recordPublicUrl(ctx);
  return port;
}

/** The shared rate counter in Redis when REDIS_URL is set; storage closes if it cannot connect. */
async function openRedis(config: Config, ctx: ServiceContext) {
  if (!config.redisUrl) return null;
  return connectRedisRateCounter(config.redisUrl).catch(async (error: unknown) => {
    await ctx.db.close();
    throw error;
  });
}

/**
 * What the operators should know: results that wait for the database, and keys left to defaults that
 * are fine for one instance but weaken the service (said once at start).
 */
function logTroubleTo(log: FastifyInstance['log'], config: Config, ctx: ServiceContext) {
  ctx.executions.onError = (error) =>
    log.warn(
      describeSafely(error),
      'results of allowed MCP calls could not be recorded (tried again while the database is unavailable)',
    );
  if (ctx.db.dialect === 'postgres' && !config.secretsKey)
    log.warn(
      'SECRETS_KEY is not set: credentials are sealed with a key file in DATA_DIR. Several instances ' +
        'must share one key: set the same SECRETS_KEY on all of them (docs/settings.md).',
    );
  if (!ctx.signer.configured)
    log.warn(
      'AUDIT_SIGNING_KEY is not set: the key that signs evidence checkpoints is kept in the database, so ' +
        'anyone who can write to the database can rewrite the evidence and sign it again. Set ' +
        'AUDIT_SIGNING_KEY (docs/evidence.md, "The signing key").',
    );
}

/** The background work: deadlines, webhook deliveries, approved proxy calls, notifications, checkpoints. */
function startWorkers(
  ctx: ServiceContext,
  upstreams: UpstreamPool,
  config: Config,
  log: FastifyInstance['log'],
  metrics: ReturnType<typeof createMetrics>,
) {
  const intervalMs = config.deadlineSweepMs;
  return [
    startDeadlineWorker(ctx, { intervalMs, log, onExpired: (count) => metrics.holdsExpired.inc(count) }),
    startWebhookWorker(ctx, { intervalMs, retryScale: config.webhookRetryScale, log }),
    startExecutionWorker(ctx, upstreams, { intervalMs, log }),
    startNotificationWorker(ctx, { intervalMs, log }),
    startCheckpointWorker(ctx, { intervalMs, log }),
  ];
}
