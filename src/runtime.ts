/** The composition root: settings → storage → services → HTTP server and workers, and a graceful stop. */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { smtpMailer } from './channels/email.ts';
import { slackClient } from './channels/slack.ts';
import { teamsClient, teamsVerifier } from './channels/teams.ts';
import { smsClient } from './channels/sms.ts';
import { createMetrics } from './http/metrics.ts';
import { MemoryRateCounter, SharedRateCounter } from './http/rate-limiter.ts';
import { connectRedisRateCounter } from './http/redis-rate-counter.ts';
import { buildHttpServer } from './http/server.ts';
import { httpClient } from './net/http-client.ts';
import { loadAuditSigner } from './services/audit-signer.ts';
import { loadSealer } from './services/secrets.ts';
import { checkSharedSlackChannel } from './services/workspaces.ts';
import type { ServiceContext } from './services/context.ts';
import { describeSafely } from './services/errors.ts';
import { HoldEvents } from './services/hold-events.ts';
import { ExecutionRecorder } from './services/record-execution.ts';
import type { Db } from './store/db.ts';
import { openDb } from './store/open.ts';
import { shareEvents } from './store/postgres-events.ts';
import { startCheckpointWorker } from './workers/checkpoints.ts';
import { startDeadlineWorker } from './workers/deadlines.ts';
import { startExecutionWorker } from './workers/executions.ts';
import { startWebhookWorker } from './workers/webhooks.ts';
import { startNotificationWorker } from './workers/notifications.ts';
import { UpstreamPool } from './mcp/upstream.ts';
import { McpRelay } from './mcp/relay.ts';

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

/** Storage and services without transports: what the CLI and the server share. */
export async function openContext(config: Config, now: () => number = Date.now): Promise<ServiceContext> {
  const db = await openDb(config);
  return contextOn(db, config, now);
}

async function contextOn(db: Db, config: Config, now: () => number): Promise<ServiceContext> {
  const signer = await loadAuditSigner(
    db,
    { signingKey: config.auditSigningKey, trustedKeys: config.auditTrustedKeys },
    now(),
  );
  // Slack's and the SMS provider's APIs are at the operator's settings, not at addresses users give:
  // the internal-address guard is not theirs to pass (a gateway inside the network is fine).
  const operatorHttp = httpClient({ allowPrivate: true });
  const ctx: ServiceContext = {
    db,
    now,
    signer,
    holdEvents: new HoldEvents(),
    executions: new ExecutionRecorder(() => ctx),
    publicUrl: config.publicUrl ?? `http://127.0.0.1:${config.port}`,
    legacyFreeMonthlyHolds: config.legacyFreeMonthlyHolds,
    apiRateLimit: config.apiRateLimit,
    mcpRateLimit: config.mcpRateLimit,
    appRateLimit: config.appRateLimit,
    widgetRateLimit: config.widgetRateLimit,
    compiledRuleSets: new Map(),
    mailer: config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : null,
    secureCookies: (config.publicUrl ?? '').startsWith('https://'),
    sealer: loadSealer(config),
    allowPrivateTargets: config.allowPrivateTargets,
    channels: {
      slack: config.slack && {
        client: slackClient({ ...config.slack, http: operatorHttp }),
        signingSecret: config.slack.signingSecret,
        channel: config.slack.channel,
      },
      sms: config.sms && {
        client: smsClient({ ...config.sms, http: operatorHttp }),
        authToken: config.sms.authToken,
        replies: config.sms.replies,
      },
      teams: config.teams && {
        client: teamsClient({ ...config.teams, http: operatorHttp }),
        verifier: teamsVerifier({ ...config.teams, http: operatorHttp, now }),
        tenantId: config.teams.tenantId,
      },
      retryScale: config.notifyRetryScale,
    },
  };
  return ctx;
}

export async function startService(
  config: Config,
  options: { now?: () => number } = {},
): Promise<RunningService> {
  const ctx = await openContext(config, options.now);
  await checkSharedSlackChannel(ctx).catch(async (error: unknown) => {
    await ctx.db.close();
    throw error;
  });
  const metrics = createMetrics(() => ctx.holdEvents.waiting);
  const lifecycle = { closing: false };
  const upstreams = new UpstreamPool({ sealer: ctx.sealer, allowPrivate: ctx.allowPrivateTargets });
  const mcpRelay = new McpRelay();
  // Several instances count the same windows: in Redis when given, else in PostgreSQL. SQLite is one process.
  const redis = config.redisUrl
    ? await connectRedisRateCounter(config.redisUrl).catch(async (error: unknown) => {
        await ctx.db.close();
        throw error;
      })
    : null;
  const counter =
    redis ?? (ctx.db.dialect === 'postgres' ? new SharedRateCounter(ctx) : new MemoryRateCounter());
  const app = buildHttpServer({
    lifecycle,
    upstreams,
    mcpRelay,
    ctx,
    metrics,
    counter,
    routes: config.role === 'workers' ? 'operations' : 'all',
    logLevel: config.logLevel,
    trustProxy: config.trustProxy,
  });
  if (redis) redis.log = app.log;
  ctx.executions.onError = (error) =>
    app.log.warn(
      describeSafely(error),
      'results of allowed MCP calls could not be recorded (tried again while the database is unavailable)',
    );
  if (ctx.db.dialect === 'postgres' && !config.secretsKey)
    app.log.warn(
      'SECRETS_KEY is not set: credentials are sealed with a key file in DATA_DIR. Several instances ' +
        'must share one key: set the same SECRETS_KEY on all of them (docs/settings.md).',
    );
  if (!ctx.signer.configured)
    app.log.warn(
      'AUDIT_SIGNING_KEY is not set: the key that signs evidence checkpoints is kept in the database, so ' +
        'anyone who can write to the database can rewrite the evidence and sign it again. Set ' +
        'AUDIT_SIGNING_KEY (docs/evidence.md, "The signing key").',
    );
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await redis?.close();
    await ctx.db.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (!config.publicUrl) ctx.publicUrl = `http://127.0.0.1:${port}`;
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
        await ctx.db.close();
      })();
      return stopping;
    },
  };
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
