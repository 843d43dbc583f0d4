/**
 * Slack across workspaces (issue 19): each workspace posts its waiting holds to its own channel
 * (`slack: { channel }` in its workspace file, or the app's Slack page), applied with evidence and
 * exported; the deployment-wide SLACK_CHANNEL serves a deployment of one workspace only, and is
 * refused once a second workspace would post to it: the second workspace is not created, a service
 * with two workspaces does not start, and a workspace made elsewhere never gets the shared channel.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { createWorkspace, SHARED_SLACK_CHANNEL } from '../src/services/workspaces.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, lastEvidence } from './support/app-client.ts';
import { type Backend, backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { type SlackStub, startSlackStub } from './support/provider-stub.ts';
import { notificationsDone, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
`;

async function start(tc: TestContext, backend: Backend, env: Record<string, string> = {}) {
  const slack = await startSlackStub();
  const t = await startTestService(backend, {
    env: { ...slack.env, SLACK_SIGNING_SECRET: 'secret', NOTIFY_RETRY_SCALE: '0.001', ...env },
  });
  tc.after(async () => {
    await t.close();
    await slack.close();
  });
  return { t, slack };
}

/** A hold that waits for people. */
async function submit(t: TestService, key: string): Promise<string> {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: 'send_invoice', arguments: { amount: 1200 } }),
  });
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.body.status, 'pending');
  return answer.body.id as string;
}

/** The channels the hold's Slack posts went to, once the notification worker is done with it. */
async function postedTo(t: TestService, slack: SlackStub, holdId: string): Promise<string[]> {
  // The jobs are written with the hold; a post is made before its job is marked done.
  await until('every Slack job of the hold to be done', async () => {
    const jobs = await t.service.ctx.db.all<{ state: string }>(
      "SELECT state FROM notifications WHERE hold_id = $1 AND channel = 'slack'",
      [holdId],
    );
    return jobs.every((job) => job.state !== 'pending') ? true : undefined;
  });
  return slack.calls
    .filter((c) => c.api === 'chat.postMessage' && JSON.stringify(c.body.blocks).includes(holdId))
    .map((c) => c.body.channel as string);
}

/** What each `config.applied` evidence entry of the workspace changed, oldest first. */
async function appliedChanges(t: TestService, workspace: Workspace) {
  const rows = await t.service.ctx.db.all<{ data: string }>(
    "SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'config.applied' ORDER BY seq",
    [workspace.id],
  );
  return rows.map((row) => JSON.parse(row.data) as Record<string, unknown>);
}

const apply = (t: TestService, workspace: Workspace, yaml: string) =>
  applyConfig(t.service.ctx, workspace, parseConfig(yaml));

for (const backend of backends) {
  describe(`Slack channels per workspace (${backend.name})`, { skip: backend.skip, timeout: 60_000 }, () => {
    test('each workspace posts to its own channel; applied with evidence, exported, removed with null', async (tc) => {
      const { t, slack } = await start(tc, backend);
      const acme = await t.workspace({ config: `${WORKSPACE}slack: { channel: C0ACME }\n` });
      const globex = await t.workspace({ config: `${WORKSPACE}slack: { channel: C0GLOBEX }\n` });
      assert.deepEqual((await appliedChanges(t, acme.workspace)).at(-1)!.slack, { channel: 'C0ACME' });
      assert.deepEqual((await exportConfig(t.service.ctx, acme.workspace)).slack, { channel: 'C0ACME' });

      const acmeHold = await submit(t, acme.key);
      const globexHold = await submit(t, globex.key);
      assert.deepEqual(await postedTo(t, slack, acmeHold), ['C0ACME']);
      assert.deepEqual(await postedTo(t, slack, globexHold), ['C0GLOBEX']);

      // Another part of the file leaves the channel as it is; null removes it.
      await apply(t, acme.workspace, 'name: Acme Corp\n');
      assert.deepEqual((await exportConfig(t.service.ctx, acme.workspace)).slack, { channel: 'C0ACME' });
      await apply(t, acme.workspace, 'slack: null\n');
      assert.deepEqual(
        { ...(await lastEvidence(t, acme.workspace)).data, version: undefined },
        { slack: null, changed_by: 'approvals apply (CLI)', items_changed: ['slack'], version: undefined },
      );
      assert.equal((await lastEvidence(t, acme.workspace)).type, 'config.applied');
      assert.equal((await exportConfig(t.service.ctx, acme.workspace)).slack, undefined);
      assert.deepEqual(await postedTo(t, slack, await submit(t, acme.key)), []);

      assert.throws(() => parseConfig('slack: { channel: "#general" }\n'), /must be a Slack channel id/);
    });

    test('SLACK_CHANNEL: kept for one workspace, refused for a second, and a service with two does not start', async (tc) => {
      const { t, slack } = await start(tc, backend, { SLACK_CHANNEL: 'C0SHARED' });
      const only = await t.workspace({ config: WORKSPACE });
      assert.deepEqual(
        await postedTo(t, slack, await submit(t, only.key)),
        ['C0SHARED'],
        'one workspace: as before',
      );

      // A second workspace would post to the same channel: not created.
      await assert.rejects(
        createWorkspace(t.service.ctx, { slug: 'second', name: 'Second' }),
        (error: Error) => error.message === SHARED_SLACK_CHANNEL,
      );
      assert.equal((await t.service.ctx.db.all('SELECT id FROM workspaces')).length, 1);

      // Made by a process without the setting: neither workspace's holds go to the shared channel now.
      const ctx = t.service.ctx;
      const elsewhere = { ...ctx, channels: { ...ctx.channels, slack: null } };
      const second = await createWorkspace(elsewhere, { slug: 'second', name: 'Second' });
      await apply(t, second, WORKSPACE);
      const { key: secondKey } = await createApiKey(ctx, { workspace: second, env: 'live' });
      assert.deepEqual(await postedTo(t, slack, await submit(t, secondKey)), []);
      assert.deepEqual(await postedTo(t, slack, await submit(t, only.key)), []);
      // A workspace's own channel still works beside it.
      await apply(t, second, 'slack: { channel: C0SECOND }\n');
      assert.deepEqual(await postedTo(t, slack, await submit(t, secondKey)), ['C0SECOND']);

      // Restarted with SLACK_CHANNEL and two workspaces: refused, with what to do.
      await t.stop();
      await assert.rejects(
        startTestService(backend, {
          storage: t.storage,
          env: { ...slack.env, SLACK_SIGNING_SECRET: 's', SLACK_CHANNEL: 'C0SHARED' },
        }),
        (error: Error) => error.message === SHARED_SLACK_CHANNEL,
      );
      // Without it, the service starts.
      const again = await startTestService(backend, {
        storage: t.storage,
        env: { ...slack.env, SLACK_SIGNING_SECRET: 's' },
      });
      await again.stop();
    });

    test("the app's Slack page sets the channel through the same apply, with evidence", async (tc) => {
      const { t } = await start(tc, backend);
      const { workspace } = await t.workspace({ config: WORKSPACE });
      const app = appClient(t);
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const page = await app.get(admin, '/app/admin/slack');
      assert.equal(page.status, 200);
      assert.match(page.text, /<h1>Slack<\/h1>/);

      const before = (await appliedChanges(t, workspace)).length;
      const bad = await app.post(admin, '/app/admin/slack', { channel: '<b>#general</b>' });
      assert.equal(bad.status, 422);
      assert.match(bad.text, /id="s-channel-error">must be a Slack channel id/);
      assert.ok(!bad.text.includes('<b>#general</b>'), 'the value is escaped');
      assert.equal((await appliedChanges(t, workspace)).length, before, 'nothing applied');
      assert.equal((await exportConfig(t.service.ctx, workspace)).slack, undefined);

      const saved = await app.post(admin, '/app/admin/slack', { channel: ' C0OPS ' });
      assert.equal(saved.status, 303, saved.text);
      assert.equal(saved.location, '/app/admin/slack');
      assert.equal(saved.notice, 'saved');
      assert.deepEqual(
        { ...(await appliedChanges(t, workspace)).at(-1), version: undefined },
        {
          slack: { channel: 'C0OPS' },
          changed_by: 'Ada Admin (admin@acme.test)',
          items_changed: ['slack'],
          version: undefined,
        },
      );
      assert.match((await app.get(admin, '/app/admin/slack')).text, /value="C0OPS"/);

      const cleared = await app.post(admin, '/app/admin/slack', { channel: '' });
      assert.equal(cleared.status, 303);
      assert.equal((await exportConfig(t.service.ctx, workspace)).slack, undefined);

      const viewer = await app.post(null, '/app/admin/slack', { channel: 'C0X' });
      assert.notEqual(viewer.status, 303, 'no change without a session');
    });

    test("a member's message that waited for their quiet hours and finds them removed goes nowhere, not to the channel", async (tc) => {
      const { t, slack } = await start(tc, backend);
      // Quiet from an hour ago to an hour from now (UTC); the admin's default deadline (4 h) comes later.
      const clock = (at: number) => new Date(at).toISOString().slice(11, 16);
      const now = t.clock.now();
      const ann = `{ email: ann@acme.test, name: Ann, role: admin, slack_user_id: U0ANN, channels: [slack], time_zone: UTC, quiet_hours: { from: "${clock(now - 3_600_000)}", to: "${clock(now + 3_600_000)}" } }`;
      const admin = '{ email: admin@acme.test, name: Admin, role: admin }';
      const tools = 'tools: [{ connection: SDK, tool: send_invoice, classification: approval }]';
      const { workspace, key } = await t.workspace({
        config: `notifications: { digest_minutes: 0 }\nslack: { channel: C0OPS }\nmembers:\n  - ${admin}\n  - ${ann}\n${tools}\n`,
      });
      const id = await submit(t, key);
      const posts = () =>
        slack.calls.filter((c) => c.api === 'chat.postMessage' && JSON.stringify(c.body.blocks).includes(id));
      // The channel's post goes at once; Ann's waits for her quiet hours to end.
      await until('the channel post', () => (posts().length > 0 ? true : undefined));

      await apply(t, workspace, `members:\n  - ${admin}\n`);
      await t.clock.advance(3_600_000 + 60_000);
      await notificationsDone(t);
      const annJobs = await t.service.ctx.db.all<{ state: string }>(
        "SELECT state FROM notifications WHERE hold_id = $1 AND channel = 'slack' AND member_id IS NOT NULL",
        [id],
      );
      assert.deepEqual(
        annJobs.map((job) => job.state),
        ['skipped'],
      );
      assert.deepEqual(
        posts().map((c) => c.body.channel),
        ['C0OPS'],
        'one post in the channel, none for Ann',
      );
    });
  });
}
