/** The composition root: settings → storage → services → HTTP server and workers, and a graceful stop. */
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { smtpMailer } from './channels/email.ts';
import { slackClient } from './channels/slack.ts';
import { smsClient } from './channels/sms.ts';
import { createMetrics } from './http/metrics.ts';
import { MemoryRateCounter } from './http/rate-limiter.ts';
import { buildHttpServer } from './http/server.ts';
import { loadAuditSigner } from './services/audit-signer.ts';
import { loadSealer } from './services/secrets.ts';
import type { ServiceContext } from './services/context.ts';
import { HoldEvents } from './services/hold-events.ts';
import type { Db } from './store/db.ts';
import { openDb } from './store/open.ts';
import { startDeadlineWorker } from './workers/deadlines.ts';
import { startExecutionWorker } from './workers/executions.ts';
import { startWebhookWorker } from './workers/webhooks.ts';
import { startNotificationWorker } from './workers/notifications.ts';
import { UpstreamPool } from './mcp/upstream.ts';

export interface RunningService {
  ctx: ServiceContext;
  app: FastifyInstance;
  url: string;
  stop(): Promise<void>;
}

/** Storage and services without transports: what the CLI and the server share. */
export async function openContext(config: Config, now: () => number = Date.now): Promise<ServiceContext> {
  const db = await openDb(config);
  return contextOn(db, config, now);
}

async function contextOn(db: Db, config: Config, now: () => number): Promise<ServiceContext> {
  const signer = await loadAuditSigner(db, config.auditSigningKey, now());
  return {
    db,
    now,
    signer,
    holdEvents: new HoldEvents(),
    publicUrl: config.publicUrl ?? `http://127.0.0.1:${config.port}`,
    legacyFreeMonthlyHolds: config.legacyFreeMonthlyHolds,
    compiledRuleSets: new Map(),
    mailer: config.smtpUrl ? smtpMailer(config.smtpUrl, config.mailFrom) : null,
    secureCookies: (config.publicUrl ?? '').startsWith('https://'),
    sealer: loadSealer(config),
    allowPrivateTargets: config.allowPrivateTargets,
    channels: {
      slack: config.slack && {
        client: slackClient(config.slack),
        signingSecret: config.slack.signingSecret,
        channel: config.slack.channel,
      },
      sms: config.sms && {
        client: smsClient(config.sms),
        authToken: config.sms.authToken,
        replies: config.sms.replies,
      },
      retryScale: config.notifyRetryScale,
    },
  };
}

export async function startService(
  config: Config,
  options: { now?: () => number } = {},
): Promise<RunningService> {
  const ctx = await openContext(config, options.now);
  const metrics = createMetrics(() => ctx.holdEvents.waiting);
  const lifecycle = { closing: false };
  const upstreams = new UpstreamPool({ sealer: ctx.sealer, allowPrivate: ctx.allowPrivateTargets });
  const app = buildHttpServer({
    lifecycle,
    upstreams,
    ctx,
    metrics,
    counter: new MemoryRateCounter(),
    logLevel: config.logLevel,
    trustProxy: config.trustProxy,
  });
  try {
    await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await ctx.db.close();
    throw error;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  if (!config.publicUrl) ctx.publicUrl = `http://127.0.0.1:${port}`;
  const deadlines = startDeadlineWorker(ctx, {
    intervalMs: config.deadlineSweepMs,
    log: app.log,
    onExpired: (count) => metrics.holdsExpired.inc(count),
  });
  const webhooks = startWebhookWorker(ctx, {
    intervalMs: config.deadlineSweepMs,
    retryScale: config.webhookRetryScale,
    log: app.log,
  });
  const executions = startExecutionWorker(ctx, upstreams, {
    intervalMs: config.deadlineSweepMs,
    log: app.log,
  });
  const notifications = startNotificationWorker(ctx, { intervalMs: config.deadlineSweepMs, log: app.log });

  let stopping: Promise<void> | undefined;
  return {
    ctx,
    app,
    url: `http://127.0.0.1:${port}`,
    stop: () => {
      // Waiters answer with the current record, requests in flight finish, then storage closes.
      stopping ??= (async () => {
        lifecycle.closing = true;
        await Promise.all([deadlines.stop(), executions.stop(), webhooks.stop(), notifications.stop()]);
        ctx.holdEvents.close();
        await app.close();
        await upstreams.close();
        ctx.mailer?.close();
        await ctx.db.close();
      })();
      return stopping;
    },
  };
}
