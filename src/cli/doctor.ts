/**
 * `approvals doctor`: checks the settings it can from here, one line each, before anyone finds out the
 * hard way: the database answers, PUBLIC_URL makes sense for links people open, the SMTP server takes
 * connections, Slack accepts the bot token, Microsoft's token endpoint accepts the Teams bot, and
 * channels are not half set up (the service then leaves them off without a word).
 */
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { loadConfig } from '../config.ts';
import { openContext } from '../open-context.ts';

type Settings = ReturnType<typeof loadConfig>;
export interface Check {
  name: string;
  status: 'ok' | 'warn' | 'fail' | 'off';
  detail: string;
}

const TIMEOUT_MS = 5_000;
const LOOPBACK = /^(127\.|localhost$|\[::1\]$)/;

/** Whether a TCP connection to host:port opens within the timeout. */
function reachable(host: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: TIMEOUT_MS });
    const done = (problem: string | null) => {
      socket.destroy();
      resolve(problem);
    };
    socket.once('connect', () => done(null));
    socket.once('timeout', () => done(`no answer within ${TIMEOUT_MS / 1000} s`));
    socket.once('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'connection failed'));
  });
}

async function storage(settings: Settings): Promise<Check> {
  const where = settings.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : `SQLite in DATA_DIR ${settings.dataDir}`;
  // Opening would make an empty database: a doctor only looks.
  if (!settings.databaseUrl && !existsSync(join(settings.dataDir, 'approvals.db')))
    return {
      name: 'storage',
      status: 'fail',
      detail: `no database in DATA_DIR ${settings.dataDir} (is DATA_DIR the service's? \`approvals migrate\` makes one)`,
    };
  try {
    const ctx = await openContext({ ...settings, logLevel: 'silent' });
    try {
      await ctx.db.one('SELECT 1 AS ok');
    } finally {
      await ctx.db.close();
    }
    return { name: 'storage', status: 'ok', detail: `${where} answers, migrations applied` };
  } catch (error) {
    return { name: 'storage', status: 'fail', detail: `${where}: ${(error as Error).message}` };
  }
}

function publicUrl(settings: Settings): Check {
  if (!settings.publicUrl)
    return {
      name: 'PUBLIC_URL',
      status: 'warn',
      detail: `not set: links in e-mails, Slack and status pages point to http://127.0.0.1:${settings.port}, which only this machine can open`,
    };
  const url = new URL(settings.publicUrl);
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname))
    return {
      name: 'PUBLIC_URL',
      status: 'warn',
      detail: `${url.origin} is plain http: sign-in links travel unencrypted`,
    };
  return { name: 'PUBLIC_URL', status: 'ok', detail: url.origin };
}

async function smtp(settings: Settings): Promise<Check> {
  if (!settings.smtpUrl)
    return {
      name: 'SMTP_URL',
      status: 'off',
      detail: 'not set: no e-mail; sign-in links come from `approvals users invite`',
    };
  const url = new URL(settings.smtpUrl);
  const port = Number(url.port || (url.protocol === 'smtps:' ? 465 : 587));
  const problem = await reachable(url.hostname, port);
  return problem
    ? { name: 'SMTP_URL', status: 'fail', detail: `${url.hostname}:${port} cannot be reached (${problem})` }
    : { name: 'SMTP_URL', status: 'ok', detail: `${url.hostname}:${port} takes connections` };
}

/** Slack's own check of a bot token (`auth.test`). */
async function slack(settings: Settings, env: NodeJS.ProcessEnv): Promise<Check> {
  if (!settings.slack) {
    const half = Boolean(env.SLACK_BOT_TOKEN) !== Boolean(env.SLACK_SIGNING_SECRET);
    return half
      ? {
          name: 'Slack',
          status: 'fail',
          detail: 'needs both SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET: it is off',
        }
      : { name: 'Slack', status: 'off', detail: 'not set up' };
  }
  try {
    const response = await fetch(`${settings.slack.apiUrl}/auth.test`, {
      method: 'POST',
      headers: { authorization: `Bearer ${settings.slack.botToken}` },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const body = (await response.json()) as { ok?: boolean; error?: unknown; team?: unknown };
    if (body.ok)
      return { name: 'Slack', status: 'ok', detail: `the bot token works (team ${String(body.team)})` };
    // Slack's error codes are fixed words (invalid_auth, token_revoked), never the token.
    const code = typeof body.error === 'string' && /^[a-z_]{1,40}$/.test(body.error) ? body.error : 'refused';
    return { name: 'Slack', status: 'fail', detail: `Slack refused the bot token (${code})` };
  } catch (error) {
    return { name: 'Slack', status: 'fail', detail: `Slack cannot be reached (${(error as Error).name})` };
  }
}

/** The Teams bot's credentials, tried at its token endpoint (the one call that needs nobody in Teams). */
async function teams(settings: Settings, env: NodeJS.ProcessEnv): Promise<Check> {
  if (!settings.teams) {
    const given = ['TEAMS_APP_ID', 'TEAMS_APP_PASSWORD', 'TEAMS_TENANT_ID'].filter((name) => env[name]);
    return given.length === 0
      ? { name: 'Teams', status: 'off', detail: 'not set up' }
      : {
          name: 'Teams',
          status: 'fail',
          detail: 'needs TEAMS_APP_ID, TEAMS_APP_PASSWORD and TEAMS_TENANT_ID: it is off',
        };
  }
  const { appId, appPassword, tokenUrl } = settings.teams;
  try {
    const response = await fetch(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: appId,
        client_secret: appPassword,
        scope: 'https://api.botframework.com/.default',
      }).toString(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (response.ok) return { name: 'Teams', status: 'ok', detail: 'the bot signs in to the Bot Framework' };
    const body = (await response.json().catch(() => ({}))) as { error?: unknown };
    // Microsoft's error codes are fixed words (invalid_client), never the secret.
    const code =
      typeof body.error === 'string' && /^[a-z_]{1,40}$/.test(body.error)
        ? body.error
        : `HTTP ${response.status}`;
    return { name: 'Teams', status: 'fail', detail: `Microsoft refused the bot's credentials (${code})` };
  } catch (error) {
    return {
      name: 'Teams',
      status: 'fail',
      detail: `Microsoft cannot be reached (${(error as Error).name})`,
    };
  }
}

function sms(settings: Settings, env: NodeJS.ProcessEnv): Check {
  if (settings.sms) return { name: 'SMS', status: 'ok', detail: `set up, from ${settings.sms.from}` };
  const given = ['SMS_ACCOUNT_SID', 'SMS_AUTH_TOKEN', 'SMS_FROM'].filter((name) => env[name]);
  return given.length === 0
    ? { name: 'SMS', status: 'off', detail: 'not set up' }
    : {
        name: 'SMS',
        status: 'fail',
        detail: 'needs SMS_ACCOUNT_SID, SMS_AUTH_TOKEN and SMS_FROM: it is off',
      };
}

export async function doctor(settings: Settings, env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  return [
    await storage(settings),
    publicUrl(settings),
    await smtp(settings),
    await slack(settings, env),
    await teams(settings, env),
    sms(settings, env),
  ];
}
