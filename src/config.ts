/** Settings, read once at start from the environment (and `.env`), then passed in. Nothing reads env later. */
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';

/** An IP address, or a CIDR with a prefix its family allows (10.0.0.0/8, fd00::/8). */
function isProxyAddress(text: string): boolean {
  const [address = '', prefix, extra] = text.split('/');
  const family = isIP(address);
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/** The largest quota a setting or a workspace override may give (requests or calls a minute). */
export const MAX_RATE_LIMIT = 1_000_000;

const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** What this instance does: the API and app, the background workers, or both. */
  ROLE: z.enum(['all', 'api', 'workers']).default('all'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: z.url().optional(),
  DATABASE_URL: z.string().optional(),
  /** Rate-limit windows in Redis instead of the database (several instances). */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
  LEGACY_FREE_MONTHLY_HOLDS: z.coerce.number().int().min(0).default(1000),
  // The Core API quota, requests a minute per workspace and bucket (the contract's 120 by default), and
  // the MCP tool calls a minute per API key. `approvals workspace limits` overrides either for one workspace.
  API_RATE_LIMIT: z.coerce.number().int().min(1).max(MAX_RATE_LIMIT).default(120),
  MCP_RATE_LIMIT: z.coerce.number().int().min(0).default(600),
  // Requests a minute per member, apart from the workspace's API buckets. The app's live updates refetch
  // an open page on every change to the workspace's holds (at most 10 times a second per tab), so a
  // person with the inbox open on a busy workspace makes far more requests than by clicking: 600 leaves
  // them room, while a script looping over a page reaches it within seconds. A widget refreshes every
  // 3 s (20 a minute); 300 covers a dozen open at once. Counted per member, whichever embed token.
  APP_RATE_LIMIT: z.coerce.number().int().min(0).default(600),
  WIDGET_RATE_LIMIT: z.coerce.number().int().min(0).default(300),
  AUDIT_SIGNING_KEY: z.string().optional(),
  /** Earlier public keys whose checkpoints still count (key rotation); only with AUDIT_SIGNING_KEY. */
  AUDIT_TRUSTED_KEYS: z.string().optional(),
  /** Where the newest chain heads this instance signed are kept across restarts (out of a database writer's reach). */
  AUDIT_STATE_DIR: z.string().min(1).optional(),
  // Whom to believe about the client's address in X-Forwarded-For: nobody, the nearest N proxies
  // (`true` is one), or the proxies at these addresses. Never "everybody": a client could then name
  // any address it likes and slip past the per-IP limits.
  TRUST_PROXY: z
    .string()
    .default('false')
    .refine(
      (value) =>
        /^(true|false|\d{1,2})$/.test(value) || value.split(',').every((part) => isProxyAddress(part.trim())),
      'must be false, true, a number of proxies, or a comma-separated list of proxy addresses or CIDRs',
    )
    .transform((value): false | number | string =>
      value === 'false' ? false : value === 'true' ? 1 : /^\d+$/.test(value) ? Number(value) : value,
    ),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().min(3).default('Approvals <approvals@localhost>'),
  ALLOW_PRIVATE_TARGETS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true'),
  SECRETS_KEY: z.string().optional(),
  WEBHOOK_RETRY_SCALE: z.coerce.number().positive().max(1000).default(1),
  DEADLINE_SWEEP_MS: z.coerce.number().int().min(10).default(1000),
  SLACK_BOT_TOKEN: z.string().optional(),
  SLACK_SIGNING_SECRET: z.string().optional(),
  SLACK_CHANNEL: z.string().optional(),
  SLACK_API_URL: z.url().default('https://slack.com/api'),
  SMS_ACCOUNT_SID: z.string().optional(),
  SMS_AUTH_TOKEN: z.string().optional(),
  SMS_FROM: z.string().optional(),
  SMS_API_URL: z.url().default('https://api.twilio.com'),
  SMS_REPLIES: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true'),
  TEAMS_APP_ID: z.string().optional(),
  TEAMS_APP_PASSWORD: z.string().optional(),
  TEAMS_TENANT_ID: z.string().optional(),
  TEAMS_SERVICE_URL: z.url().default('https://smba.trafficmanager.net/teams/'),
  TEAMS_TOKEN_URL: z.url().optional(),
  TEAMS_OPENID_METADATA_URL: z
    .url()
    .default('https://login.botframework.com/v1/.well-known/openidconfiguration'),
  NOTIFY_RETRY_SCALE: z.coerce.number().positive().max(1000).default(1),
});

export type Config = ReturnType<typeof parseConfigFrom>;

function parseConfigFrom(env: Record<string, string | undefined>) {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw new Error(`invalid settings: ${problems.join('; ')}`);
  }
  const settings = parsed.data;
  return {
    port: settings.PORT,
    role: settings.ROLE,
    host: settings.HOST,
    /** Absent: `http://127.0.0.1:<port>`, known once the server listens. */
    publicUrl: settings.PUBLIC_URL?.replace(/\/+$/, ''),
    databaseUrl: settings.DATABASE_URL || undefined,
    redisUrl: settings.REDIS_URL || undefined,
    dataDir: settings.DATA_DIR,
    logLevel: settings.LOG_LEVEL,
    /** Absent: pretty when stdout is a terminal, JSON otherwise. */
    logFormat: settings.LOG_FORMAT,
    legacyFreeMonthlyHolds: settings.LEGACY_FREE_MONTHLY_HOLDS,
    apiRateLimit: settings.API_RATE_LIMIT,
    mcpRateLimit: settings.MCP_RATE_LIMIT,
    appRateLimit: settings.APP_RATE_LIMIT,
    widgetRateLimit: settings.WIDGET_RATE_LIMIT,
    auditSigningKey: settings.AUDIT_SIGNING_KEY?.replaceAll('\\n', '\n'),
    auditTrustedKeys: settings.AUDIT_TRUSTED_KEYS?.replaceAll('\\n', '\n'),
    auditStateDir: settings.AUDIT_STATE_DIR,
    trustProxy: settings.TRUST_PROXY,
    deadlineSweepMs: settings.DEADLINE_SWEEP_MS,
    smtpUrl: settings.SMTP_URL,
    allowPrivateTargets: settings.ALLOW_PRIVATE_TARGETS,
    secretsKey: settings.SECRETS_KEY,
    webhookRetryScale: settings.WEBHOOK_RETRY_SCALE,
    mailFrom: settings.MAIL_FROM,
    /**
     * Slack needs the bot token and the signing secret. SLACK_CHANNEL is the channel of a deployment
     * with one workspace; each workspace sets its own (`slack: { channel }`).
     */
    slack:
      settings.SLACK_BOT_TOKEN && settings.SLACK_SIGNING_SECRET
        ? {
            botToken: settings.SLACK_BOT_TOKEN,
            signingSecret: settings.SLACK_SIGNING_SECRET,
            channel: settings.SLACK_CHANNEL ?? null,
            apiUrl: settings.SLACK_API_URL,
          }
        : null,
    sms:
      settings.SMS_ACCOUNT_SID && settings.SMS_AUTH_TOKEN && settings.SMS_FROM
        ? {
            accountSid: settings.SMS_ACCOUNT_SID,
            authToken: settings.SMS_AUTH_TOKEN,
            from: settings.SMS_FROM,
            apiUrl: settings.SMS_API_URL,
            replies: settings.SMS_REPLIES,
          }
        : null,
    /** Microsoft Teams needs the bot's app id and password and the tenant it serves (single-tenant bot). */
    teams:
      settings.TEAMS_APP_ID && settings.TEAMS_APP_PASSWORD && settings.TEAMS_TENANT_ID
        ? {
            appId: settings.TEAMS_APP_ID,
            appPassword: settings.TEAMS_APP_PASSWORD,
            tenantId: settings.TEAMS_TENANT_ID,
            serviceUrl: settings.TEAMS_SERVICE_URL,
            // A single-tenant bot's token endpoint (Microsoft no longer registers multi-tenant bots).
            tokenUrl:
              settings.TEAMS_TOKEN_URL ??
              `https://login.microsoftonline.com/${encodeURIComponent(settings.TEAMS_TENANT_ID)}/oauth2/v2.0/token`,
            openIdMetadataUrl: settings.TEAMS_OPENID_METADATA_URL,
          }
        : null,
    notifyRetryScale: settings.NOTIFY_RETRY_SCALE,
  };
}

/** `overrides` win over the environment (tests, the CLI). */
export function loadConfig(overrides: Record<string, string | undefined> = {}) {
  if (existsSync('.env')) process.loadEnvFile('.env');
  // An empty setting means "not set", as in most .env conventions.
  const env = Object.fromEntries(
    Object.entries({ ...process.env, ...overrides }).filter(([, value]) => value !== ''),
  );
  return parseConfigFrom(env);
}
