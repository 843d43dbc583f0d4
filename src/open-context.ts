/**
 * Storage and services without transports: what the CLI and the server share. Kept apart from the
 * server (runtime.ts), so that a command loads none of the HTTP stack.
 */
import type { Config } from './config.ts';
import { smtpMailer } from './channels/email.ts';
import { slackClient } from './channels/slack.ts';
import { teamsClient, teamsVerifier } from './channels/teams.ts';
import { smsClient } from './channels/sms.ts';
import { httpClient } from './net/http-client.ts';
import { loadAuditSigner } from './services/audit-signer.ts';
import { ChainGuard } from './services/chain-guard.ts';
import type { ServiceContext } from './services/context.ts';
import { HoldEvents } from './services/hold-events.ts';
import { ExecutionRecorder } from './services/record-execution.ts';
import { loadSealer } from './services/secrets.ts';
import type { Db } from './store/db.ts';
import { openDb } from './store/open.ts';
import { tracedDb } from './telemetry/traced-db.ts';

export async function openContext(config: Config, now: () => number = Date.now): Promise<ServiceContext> {
  const db = tracedDb(await openDb(config));
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
    chainGuard: new ChainGuard(config.auditStateDir ?? null),
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
