/**
 * Secrets stay secret (settings.md, SECRETS_KEY; mcp.md; webhooks.md): MCP upstream credentials and
 * the webhook signing secret are sealed with the key from the settings, so the raw database (every
 * table, every column, and on SQLite the files themselves) never holds them in plain text, and a
 * service with another key cannot open them; no export (config, evidence, the app's download,
 * reports) and no log line (at debug, with every channel failing) carries an API key, a webhook
 * secret, an upstream credential or a channel's credentials.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import pg from 'pg';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { getHold } from '../src/services/read-hold.ts';
import { loadSealer } from '../src/services/secrets.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { findMcpServerBySlug } from '../src/store/mcp-servers.ts';
import { findWebhookEndpoint } from '../src/store/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends, type Storage } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { freePort, type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { killServerProcesses, startServerProcess, storageSettings } from './support/server-process.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

/** A value unique to this run that starts with its random part (so even a cut-off prefix is telling). */
const marker = (label: string) => `${randomBytes(8).toString('hex')}-${label}`;
const UPSTREAM_TOKEN = marker('upstream-credential');
const UPSTREAM_AUTH = `Bearer ${UPSTREAM_TOKEN}`;
/** The headers as the service seals them: their plain JSON must not be in storage in any form. */
const UPSTREAM_HEADERS = JSON.stringify({ Authorization: UPSTREAM_AUTH });
const KEY_A = randomBytes(32).toString('base64');
const KEY_B = randomBytes(32).toString('base64');

const MEMBERS = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
const DENY = 'rules:\n  - { name: No crypto, tool: buy_crypto, effect: deny, reason: Not here }\n';

interface Secret {
  name: string;
  value: string;
}

/**
 * A secret, and 12 characters of its random part from `from` on: a PDF cell shows a long value
 * cut off after some 20 characters, and a cut-off secret is still a leaked one.
 */
const secret = (name: string, value: string, from = 0): Secret[] => [
  { name, value },
  { name: `${name} (12 characters of it)`, value: value.slice(from, from + 12) },
];

/** Fails naming the secret and the place, never printing the secret or the text. */
function assertNoSecret(text: string, secrets: Secret[], where: string) {
  for (const { name, value } of secrets) {
    assert.ok(value.length >= 12, `${name}: a secret worth looking for`);
    assert.ok(!text.includes(value), `${where} contains the ${name}`);
  }
}

/** Every secret of a workspace, with other forms it could take. */
function workspaceSecrets(apiKey: string, webhookSecret: string): Secret[] {
  return [
    // Past `svc_live_` + 3: `key:svc_live_abc` is an agent's documented default id.
    ...secret('API key', apiKey, 'svc_live_'.length),
    ...secret('webhook secret', webhookSecret, 'whsec_'.length),
    {
      name: 'webhook secret (key bytes as hex)',
      value: Buffer.from(webhookSecret.slice('whsec_'.length), 'base64').toString('hex'),
    },
    ...secret('upstream header value', UPSTREAM_TOKEN),
    { name: 'upstream headers (base64)', value: Buffer.from(UPSTREAM_HEADERS).toString('base64') },
  ];
}

/**
 * The whole database as text, read behind the service's back: every table of the storage (from
 * sqlite_master / information_schema), every row, every column (blobs as text and as hex).
 */
async function dumpDatabase(storage: Storage): Promise<{ tables: string[]; text: string }> {
  const parts: string[] = [];
  const tables: string[] = [];
  if (storage.env.DATABASE_URL) {
    const client = new pg.Client({ connectionString: storage.env.DATABASE_URL });
    await client.connect();
    try {
      const listed = await client.query<{ name: string }>(
        `SELECT table_name AS name FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`,
      );
      for (const { name } of listed.rows) {
        tables.push(name);
        // A row cast to text: every column, whatever its type (bytea as hex).
        const rows = await client.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`);
        parts.push(`# ${name}`, ...rows.rows.map((r) => r.row));
      }
    } finally {
      await client.end();
    }
  } else {
    const db = new DatabaseSync(join(storage.env.DATA_DIR, 'approvals.db'), { readOnly: true });
    try {
      const listed = db
        .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
        .all() as { name: string }[];
      for (const { name } of listed) {
        tables.push(name);
        parts.push(`# ${name}`);
        for (const row of db.prepare(`SELECT * FROM "${name}"`).all()) {
          for (const value of Object.values(row)) {
            if (value instanceof Uint8Array) {
              const bytes = Buffer.from(value);
              parts.push(bytes.toString('latin1'), bytes.toString('hex'));
            } else parts.push(String(value));
          }
        }
      }
    } finally {
      db.close();
    }
  }
  return { tables, text: parts.join('\n') };
}

/** SQLite only: the bytes of every file under DATA_DIR (database, WAL, shared memory, key file). */
function rawFiles(storage: Storage): { names: string[]; bytes: Buffer } {
  const names = readdirSync(storage.env.DATA_DIR);
  return {
    names,
    bytes: Buffer.concat(names.map((name) => readFileSync(join(storage.env.DATA_DIR, name)))),
  };
}

function pdfText(bytes: Buffer): string {
  assert.equal(bytes.subarray(0, 5).toString(), '%PDF-');
  const run = spawnSync('pdftotext', ['-layout', '-', '-'], { input: bytes, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

/** An agent's MCP client on `base`/mcp/`slug`. */
async function agent(base: string, key: string, slug: string): Promise<Client> {
  const client = new Client(
    { name: 'secrets-test', version: '1' },
    { versionNegotiation: { mode: 'legacy' } },
  );
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp/${slug}`), {
      // One connection per request: a kept-alive socket that carried the session's stream would
      // hold the service's stop for the client's keep-alive timeout (4 s).
      requestInit: { headers: { Authorization: `Bearer ${key}`, Connection: 'close' } },
    }),
  );
  return client;
}

/** One tools/call through the proxy; the client is closed afterwards. */
async function callThroughProxy(base: string, key: string, slug: string, args: Record<string, unknown>) {
  const client = await agent(base, key, slug);
  try {
    return (await client.callTool({ name: 'record', arguments: args })) as {
      content: { type: string; text?: string }[];
      isError?: boolean;
    };
  } finally {
    await client.close().catch(() => undefined);
  }
}

for (const backend of backends) {
  describe(`secrets at rest and in exports on ${backend.name}`, { skip: backend.skip }, () => {
    const env = { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001', SECRETS_KEY: KEY_A };
    let storage: Storage;
    let t: TestService;
    let recorder: RecordingUpstream;
    let hook: Receiver;
    let workspace: Workspace;
    let key: string;
    let webhookSecret: string;
    let secrets: Secret[];
    let firstCall: Awaited<ReturnType<typeof callThroughProxy>>;

    before(async () => {
      recorder = await startRecordingUpstream();
      hook = await startReceiver();
      t = await startTestService(backend, { env });
      storage = t.storage;
      ({ workspace, key } = await t.workspace({
        config:
          MEMBERS +
          DENY +
          `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${recorder.url}",` +
          ` headers: { Authorization: "${UPSTREAM_AUTH}" } }\n` +
          'tools:\n  - { connection: Recorder, tool: record, classification: allow }\n',
      }));
      const applied = await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(`webhook: { url: "${hook.url}" }\n`),
      );
      assert.ok(applied.webhook_secret);
      webhookSecret = applied.webhook_secret;
      secrets = workspaceSecrets(key, webhookSecret);
      // In use: an allowed call through the proxy, and a denied hold (a webhook event).
      firstCall = await callThroughProxy(t.url, key, 'rec', { text: 'first' });
      const denied = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'buy_crypto' }),
      });
      assert.equal(denied.status, 201, denied.text);
      await hook.waitFor(1);
    });
    after(async () => {
      await t?.stop();
      await storage?.drop();
      await recorder?.close();
      await hook?.close();
    });

    test('upstream credentials and the webhook secret are sealed with SECRETS_KEY: the raw database never holds them', async () => {
      // In use: the upstream received the header, the receiver a body signed with the secret.
      assert.equal(firstCall.isError, undefined);
      assert.deepEqual(firstCall.content, [{ type: 'text', text: 'recorded: first' }]);
      assert.ok(recorder.requests.length > 0);
      for (const request of recorder.requests) assert.equal(request.headers.authorization, UPSTREAM_AUTH);
      const [delivery] = hook.requests;
      assert.equal(
        delivery!.headers['x-service-signature'],
        createHmac('sha256', webhookSecret).update(delivery!.body).digest('hex'),
      );

      // Stored sealed with the key from the settings: it opens them, another key does not.
      const server = (await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'rec'))!;
      const endpoint = (await findWebhookEndpoint(t.service.ctx.db, workspace.id))!;
      const right = loadSealer({ secretsKey: KEY_A, dataDir: storage.env.DATA_DIR });
      const wrong = loadSealer({ secretsKey: KEY_B, dataDir: storage.env.DATA_DIR });
      assert.match(server.headersSealed, /^v1\./);
      assert.match(endpoint.secretSealed, /^v1\./);
      assert.equal(right.open(server.headersSealed), UPSTREAM_HEADERS);
      assert.equal(right.open(endpoint.secretSealed), webhookSecret);
      assert.throws(() => wrong.open(server.headersSealed));
      assert.throws(() => wrong.open(endpoint.secretSealed));

      // Every table, every column: the sealed values are there, the secrets are not.
      const dump = await dumpDatabase(storage);
      for (const table of ['mcp_servers', 'webhook_endpoints', 'webhook_events', 'evidence', 'holds'])
        assert.ok(dump.tables.includes(table), `the dump covers ${table}`);
      assert.ok(dump.text.includes(server.headersSealed), 'the dump holds the sealed headers');
      assert.ok(dump.text.includes(endpoint.secretSealed), 'the dump holds the sealed webhook secret');
      assert.ok(dump.text.includes(recorder.url) && dump.text.includes(hook.url));
      assertNoSecret(dump.text, secrets, `the database (${dump.tables.length} tables)`);
      if (backend.name === 'sqlite') {
        const files = rawFiles(storage);
        assert.ok(files.names.includes('approvals.db'));
        assert.ok(files.bytes.includes(server.headersSealed), 'the files hold the sealed headers');
        assertNoSecret(files.bytes.toString('latin1'), secrets, `DATA_DIR (${files.names.join(', ')})`);
      }
    });

    test('a service with another SECRETS_KEY cannot open the credentials; the right key can', async () => {
      const sealed = (await findMcpServerBySlug(t.service.ctx.db, workspace.id, 'rec'))!.headersSealed;
      await t.stop();
      t = await startTestService(backend, { storage, env: { ...env, SECRETS_KEY: KEY_B } });
      assert.throws(() => t.service.ctx.sealer.open(sealed));
      const seen = recorder.requests.length;
      await assert.rejects(
        callThroughProxy(t.url, key, 'rec', { text: 'wrong key' }),
        /cannot be reached/,
        'the upstream call fails',
      );
      assert.equal(recorder.requests.length, seen, 'nothing reached the upstream');
      assert.deepEqual(recorder.calls, [{ name: 'record', arguments: { text: 'first' } }]);

      await t.stop();
      t = await startTestService(backend, { storage, env });
      assert.equal(t.service.ctx.sealer.open(sealed), UPSTREAM_HEADERS);
      const result = await callThroughProxy(t.url, key, 'rec', { text: 'right key' });
      assert.deepEqual(result.content, [{ type: 'text', text: 'recorded: right key' }]);
      const fresh = recorder.requests.slice(seen);
      assert.ok(fresh.length > 0);
      for (const request of fresh) assert.equal(request.headers.authorization, UPSTREAM_AUTH);
      assert.deepEqual(recorder.calls.at(-1), { name: 'record', arguments: { text: 'right key' } });
    });

    test('no export carries a secret: config, evidence (CLI and app), reports (CSV and PDF)', async () => {
      // `approvals export --json` and `approvals evidence export`, side by side (each is a process of
      // its own); the function `export` calls, and its YAML (the command's text output).
      const [exported, evidence] = await Promise.all([
        approvals(storage, ['export', '--workspace', workspace.slug, '--json']),
        approvals(storage, ['evidence', 'export', '--workspace', workspace.slug]),
      ]);
      assert.equal(exported.code, 0, exported.stderr);
      const { config } = JSON.parse(exported.stdout);
      assert.deepEqual(config.mcp_servers, [{ slug: 'rec', name: 'Recorder', url: recorder.url }]);
      assert.deepEqual(config.webhook, { url: hook.url });
      assertNoSecret(exported.stdout + exported.stderr, secrets, 'approvals export --json');
      const yaml = stringify(await exportConfig(t.service.ctx, workspace));
      assert.match(yaml, /slug: rec/);
      assertNoSecret(yaml, secrets, 'exportConfig as YAML');

      // The evidence, JSON Lines, names the header but never its value.
      assert.equal(evidence.code, 0, evidence.stderr);
      const entries = evidence.stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      const types = entries.map((entry) => entry.type);
      for (const type of ['config.applied', 'key.created', 'hold.submitted', 'hold.executed'])
        assert.ok(types.includes(type), `the export has ${type}`);
      assert.ok(evidence.stdout.includes('"header_names":["Authorization"]'));
      assertNoSecret(evidence.stdout + evidence.stderr, secrets, 'approvals evidence export');

      // The app's download of the same.
      const { get, signIn } = appClient(() => t);
      const admin = await signIn(workspace, 'admin@acme.test');
      const download = await get(admin, '/app/evidence/export');
      assert.equal(download.status, 200);
      assert.ok(download.text.trimEnd().split('\n').length > entries.length, 'and the sign-in since');
      assert.ok(download.text.includes('"header_names":["Authorization"]'));
      assertNoSecret(download.text, secrets, '/app/evidence/export');

      // Reports, through the API and the app, as CSV and as PDF.
      for (const kind of ['oversight', 'activity']) {
        const csv = await call(t.url, 'GET', `/api/v1/reports/${kind}?format=csv`, { key });
        assert.equal(csv.status, 200);
        if (kind === 'activity') assert.match(csv.text, /record/);
        assertNoSecret(csv.text, secrets, `the ${kind} CSV`);
        const app = await get(admin, `/app/reports/${kind}?format=csv`);
        assert.equal(app.status, 200);
        assertNoSecret(app.text, secrets, `the app's ${kind} CSV`);
        const pdf = await fetch(`${t.url}/api/v1/reports/${kind}?format=pdf`, {
          headers: { authorization: `Bearer ${key}` },
        });
        assert.equal(pdf.status, 200);
        const bytes = Buffer.from(await pdf.arrayBuffer());
        const text = pdfText(bytes);
        if (kind === 'activity') assert.match(text, /record/);
        assertNoSecret(text, secrets, `the ${kind} PDF (text)`);
        assertNoSecret(bytes.toString('latin1'), secrets, `the ${kind} PDF (bytes)`);
      }
    });
  });

  describe(`secrets in logs on ${backend.name}`, { skip: backend.skip }, () => {
    test('at LOG_LEVEL=debug, with every channel, the webhook and the upstream failing, no secret is logged', async () => {
      const channel = {
        smtpPassword: marker('smtp-password'),
        slackToken: `xoxb-${marker('slack-token')}`,
        slackSigningSecret: marker('slack-signing-secret'),
        smsAuthToken: marker('sms-auth-token'),
      };
      const [smtpPort, slackPort, smsPort, hookPort, upstreamPort] = await Promise.all(
        Array.from({ length: 5 }, () => freePort()),
      );
      const storage = await backend.create();
      const base = {
        ...storageSettings(storage),
        ALLOW_PRIVATE_TARGETS: 'true',
        SECRETS_KEY: KEY_A,
      };
      const ctx: ServiceContext = await openContext(loadConfig({ ...base, PORT: '0', LOG_LEVEL: 'silent' }));
      try {
        const workspace = await createWorkspace(ctx, {
          slug: `logs-${randomBytes(4).toString('hex')}`,
          name: 'Acme',
        });
        const applied = await applyConfig(
          ctx,
          workspace,
          parseConfig(
            // Each request goes at once (no digest window), so every channel is tried.
            'notifications: { digest_minutes: 0 }\n' +
              'members:\n  - { email: admin@acme.test, name: Admin, role: admin, phone: "+15550100",' +
              ' slack_user_id: U0ADMIN, channels: [email, sms, slack] }\n' +
              `mcp_servers:\n  - { slug: down, name: Down, url: "http://127.0.0.1:${upstreamPort}/mcp",` +
              ` headers: { Authorization: "${UPSTREAM_AUTH}" } }\n` +
              'tools:\n  - { connection: Down, tool: record, classification: approval }\n' +
              `webhook: { url: "http://127.0.0.1:${hookPort}/hook" }\n`,
          ),
        );
        const { key } = await createApiKey(ctx, { workspace, env: 'live' });
        const secrets: Secret[] = [
          ...workspaceSecrets(key, applied.webhook_secret!),
          ...secret('SMTP password', channel.smtpPassword),
          ...secret('Slack bot token', channel.slackToken, 'xoxb-'.length),
          ...secret('Slack signing secret', channel.slackSigningSecret),
          ...secret('SMS auth token', channel.smsAuthToken),
          ...secret('SECRETS_KEY', KEY_A),
        ];

        const server = await startServerProcess(storage, {
          ...base,
          LOG_LEVEL: 'debug',
          DEADLINE_SWEEP_MS: '50',
          WEBHOOK_RETRY_SCALE: '0.0001',
          NOTIFY_RETRY_SCALE: '0.001',
          SMTP_URL: `smtp://approvals:${channel.smtpPassword}@127.0.0.1:${smtpPort}`,
          SLACK_BOT_TOKEN: channel.slackToken,
          SLACK_SIGNING_SECRET: channel.slackSigningSecret,
          SLACK_API_URL: `http://127.0.0.1:${slackPort}/api`,
          SMS_ACCOUNT_SID: 'AC0000000000',
          SMS_AUTH_TOKEN: channel.smsAuthToken,
          SMS_FROM: '+15550199',
          SMS_API_URL: `http://127.0.0.1:${smsPort}`,
        });

        // A held call through the proxy: e-mail, SMS and Slack requests go out (and fail).
        const client = await agent(server.url, key, 'down');
        const held = (await client.callTool({ name: 'record', arguments: { text: 'held' } })) as {
          content: { text: string }[];
        };
        await client.close();
        const reference = JSON.parse(held.content[1]!.text).service.reference as string;
        assert.equal((await getHold(ctx, workspace.id, reference)).status, 'pending');
        // The key where a careless log would print it (a query string), and a sign-in by e-mail.
        await call(server.url, 'GET', `/api/v1/holds/${reference}?api_key=${key}`, { key });
        const login = await fetch(`${server.url}/app/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'email=admin%40acme.test',
        });
        assert.equal(login.status, 200, 'the sign-in e-mail is queued, whether or not it can be sent');
        const sent = () =>
          ctx.db.all<{ channel: string; attempts: number }>(
            `SELECT channel, attempts FROM notifications WHERE hold_id = $1 AND kind = 'request'
             UNION ALL SELECT channel, attempts FROM notifications WHERE kind = 'sign_in'`,
            [reference],
          );
        await until('every channel and the sign-in e-mail to have failed twice', async () => {
          const jobs = await sent();
          return jobs.length === 4 && jobs.every((job) => job.attempts >= 2) ? jobs : undefined;
        });

        // Approved in the app: the upstream call (refused) and the webhook events (refused) follow.
        const { post, signIn } = appClient({ url: server.url, service: { ctx } } as unknown as TestService);
        const admin = await signIn(workspace, 'admin@acme.test');
        const decided = await post(admin, `/app/holds/${reference}/decide`, { verdict: 'approve' });
        assert.equal(decided.status, 303, decided.text.slice(0, 500));
        await until('the approved call to fail', async () => {
          const hold = await getHold(ctx, workspace.id, reference);
          return hold.status === 'failed' ? hold : undefined;
        });
        await until('the webhook events to have failed twice', async () => {
          const events = await ctx.db.all<{ attempts: number }>(
            'SELECT attempts FROM webhook_events WHERE workspace_id = $1',
            [workspace.id],
          );
          return events.length >= 1 && events.every((event) => event.attempts >= 2) ? events : undefined;
        });

        server.child.kill('SIGTERM');
        assert.equal((await server.exited).code, 0);
        const output = server.output();
        // The failures and the requests were logged.
        assert.match(output, /notification attempt failed/);
        assert.match(output, /"url":"\/mcp\/down"/);
        assert.match(output, /"url":"\/app\/holds\/[^"]+\/decide"/);
        assertNoSecret(output, secrets, 'the log');
        // Nor are they in the database, where the failures are recorded.
        const dump = await dumpDatabase(storage);
        assert.ok(dump.text.includes('ECONNREFUSED') || dump.text.includes('cannot be reached'));
        assertNoSecret(dump.text, secrets, 'the database');
      } finally {
        await killServerProcesses();
        await ctx.db.close();
        await storage.drop();
      }
    });
  });
}
