/**
 * A Teams channel per workspace (issue 39), as Slack has: each workspace posts its waiting holds to its
 * own Teams channel (`teams: { channel }` in its workspace file, or the app's Teams page), applied with
 * evidence and exported. The card is sent through the outbox, updated when the hold is decided or
 * expires, shows four-eyes' count, and a press in the channel decides as the member who pressed, only
 * when they are an approver and only when the card shows every argument. Against the Bot Connector
 * stand-in (test/support/teams-connector.ts), on both backends.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, lastEvidence, verifiedEvidence } from './support/app-client.ts';
import { type Backend, backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { notificationsDone, startTestService, type TestService } from './support/service.ts';
import { startTeamsConnector, type TeamsConnector } from './support/teams-connector.ts';
import { until } from './support/wait.ts';

const ANN = '6b1f6c8e-33a5-4c3e-9d65-0d0f9c3c1a11';
const BOB = '0d6a1e52-8a1f-4a7e-b0f0-5e8c1d2b3c44';
const VIC = '7c2e9d41-1b3a-4f6e-a8d7-3e5f7a9b1c22';
const STRANGER = 'ffffffff-8a1f-4a7e-b0f0-5e8c1d2b3c44';
const OPS = '19:3f9a0b2c4d6e8f10a1b2c3d4e5f60718@thread.tacv2';
const OTHER = '19:0a1b2c3d4e5f60718293a4b5c6d7e8f9@thread.tacv2';

// Ann and Bob approve (no Teams chats of their own: only the channel shows the card); Vic only views.
const CONFIG = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, teams_user_id: ${ANN}, channels: [email] }
  - { email: bob@acme.test, name: Bob, role: approver, teams_user_id: ${BOB}, channels: [email] }
  - { email: vic@acme.test, name: Vic, role: viewer, teams_user_id: ${VIC}, channels: [email] }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2, timeout_minutes: 5 }
`;

async function start(tc: TestContext, backend: Backend) {
  const teams = await startTeamsConnector();
  const t = await startTestService(backend, { env: { ...teams.env, NOTIFY_RETRY_SCALE: '0.001' } });
  tc.after(async () => {
    await t.close();
    await teams.close();
  });
  return { t, teams };
}

async function submit(t: TestService, key: string, args: Record<string, unknown> = { amount: 1200 }) {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: 'pay', arguments: args }),
  });
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

/** The hold's channel cards (where each was posted), once every job is done. */
async function channelPosts(t: TestService, holdId: string) {
  await notificationsDone(t);
  const rows = await t.service.ctx.db.all<{ ref: string }>(
    `SELECT message_ref AS ref FROM notifications
     WHERE hold_id = $1 AND channel = 'teams' AND member_id IS NULL AND state = 'sent' AND kind = 'request'`,
    [holdId],
  );
  return rows.map((row) => JSON.parse(row.ref) as { conversationId: string; activityId: string });
}

/** The channel a card was posted in: its thread is `<channel>;messageid=<id>`. */
const channelOf = (posted: { conversationId: string }) => posted.conversationId.split(';')[0];
const textOf = (card: any) => JSON.stringify(card.body);
const actionsOf = (card: any) => (card.actions ?? []).map((action: any) => action.verb ?? action.title);

/** Presses a button on the channel's card, as Teams sends it, signed as the Bot Connector signs. */
async function pressInChannel(
  t: TestService,
  teams: TeamsConnector,
  posted: { conversationId: string; activityId: string },
  verb: 'approve' | 'reject',
  holdId: string,
  aadObjectId: string,
) {
  const invoke = teams.invokeAction({
    verb,
    holdId,
    aadObjectId,
    tenantId: teams.tenantId,
    conversationId: posted.conversationId,
    replyToId: posted.activityId,
  });
  const { headers, body } = teams.signedActivity(invoke);
  const response = await fetch(`${t.url}/teams/messages`, { method: 'POST', headers, body });
  assert.equal(response.status, 200);
  return (await response.json()) as { type: string; value: any };
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
  describe(`Teams channels per workspace (${backend.name})`, { skip: backend.skip, timeout: 60_000 }, () => {
    test('each workspace posts to its own channel; applied with evidence, exported, removed with null', async (tc) => {
      const { t } = await start(tc, backend);
      const acme = await t.workspace({ config: `${CONFIG}teams: { channel: "${OPS}" }\n` });
      const globex = await t.workspace({ config: `${CONFIG}teams: { channel: "${OTHER}" }\n` });
      assert.deepEqual((await appliedChanges(t, acme.workspace)).at(-1)!.teams, { channel: OPS });
      assert.deepEqual((await exportConfig(t.service.ctx, acme.workspace)).teams, { channel: OPS });

      const acmePosts = await channelPosts(t, await submit(t, acme.key));
      const globexPosts = await channelPosts(t, await submit(t, globex.key));
      // Each a new post (thread) in its workspace's channel.
      assert.deepEqual(acmePosts.map(channelOf), [OPS]);
      assert.deepEqual(globexPosts.map(channelOf), [OTHER]);

      // Another part of the file leaves the channel as it is; null removes it.
      await apply(t, acme.workspace, 'name: Acme Corp\n');
      assert.deepEqual((await exportConfig(t.service.ctx, acme.workspace)).teams, { channel: OPS });
      await apply(t, acme.workspace, 'teams: null\n');
      const last = await lastEvidence(t, acme.workspace);
      assert.equal(last.type, 'config.applied');
      assert.deepEqual(
        { ...last.data, version: undefined },
        { teams: null, changed_by: 'approvals apply (CLI)', items_changed: ['teams'], version: undefined },
      );
      assert.equal((await exportConfig(t.service.ctx, acme.workspace)).teams, undefined);
      assert.deepEqual(await channelPosts(t, await submit(t, acme.key)), []);

      for (const bad of ['General', '19:abc@thread.tacv2;messageid=1', 'a:1abc', '19:<b>@thread.tacv2'])
        assert.throws(
          () => parseConfig(`teams: { channel: "${bad}" }\n`),
          /must be a Teams channel id like 19:…@thread\.tacv2/,
          bad,
        );
    });

    test("a press in the channel decides as the member who pressed; four-eyes' count; the card follows the hold", async (tc) => {
      const { t, teams } = await start(tc, backend);
      const { workspace, key } = await t.workspace({ config: `${CONFIG}teams: { channel: "${OPS}" }\n` });
      const id = await submit(t, key);
      const [posted] = await channelPosts(t, id);
      assert.ok(posted);
      let card = teams.cardOf(posted);
      assert.deepEqual(actionsOf(card), ['approve', 'reject'], 'no personal link in a channel');
      assert.match(textOf(card), /pay\(amount=1200\)/);

      // Neither a stranger nor a member who is not an approver of the hold decides: Teams shows why.
      for (const who of [STRANGER, VIC]) {
        const refused = await pressInChannel(t, teams, posted, 'approve', id, who);
        assert.equal(refused.type, 'application/vnd.microsoft.error');
        assert.equal(refused.value.message, 'You are not an approver of this action.');
      }
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.approvals.received, 0);

      // Ann's press counts as Ann's; her card closes for her, the channel's stays open with the count.
      const ann = await pressInChannel(t, teams, posted, 'approve', id, ANN);
      assert.match(JSON.stringify(ann.value.body), /Recorded: 1 more approval is needed/);
      await notificationsDone(t);
      card = teams.cardOf(posted);
      assert.match(textOf(card), /approved by Ann \(1 of 2\)/);
      assert.deepEqual(actionsOf(card), ['approve', 'reject']);

      await pressInChannel(t, teams, posted, 'approve', id, BOB);
      const hold = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
      assert.deepEqual([hold.body.status, hold.body.decision.channel], ['approved', 'teams']);
      await notificationsDone(t);
      card = teams.cardOf(posted);
      assert.match(textOf(card), /Approved.*\(via teams\)/);
      assert.deepEqual(actionsOf(card), []);

      await verifiedEvidence(t, key);
      const entries = await t.service.ctx.db.all<{ type: string; data: string }>(
        'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
        [workspace.id],
      );
      assert.deepEqual(
        entries
          .map((entry) => ({ type: entry.type, data: JSON.parse(entry.data) }))
          .filter((entry) => entry.data.hold === id)
          .map((entry) => [entry.type, entry.data.member?.email, entry.data.channel]),
        [
          ['hold.submitted', undefined, undefined],
          ['hold.approval_recorded', 'ann@acme.test', 'teams'],
          ['hold.approved', 'bob@acme.test', 'teams'],
        ],
      );

      // A hold nobody decides: its channel card says it expired, without buttons.
      const late = await submit(t, key);
      const [latePost] = await channelPosts(t, late);
      await t.clock.advance(5 * 60_000 + 1_000);
      await until('the hold to expire', async () =>
        (await call(t.url, 'GET', `/api/v1/holds/${late}`, { key })).body.status === 'expired'
          ? true
          : undefined,
      );
      await notificationsDone(t);
      card = teams.cardOf(latePost!);
      assert.match(textOf(card), /Expired/);
      assert.deepEqual(actionsOf(card), []);
    });

    test('a card that cannot show every argument offers Review only, and a press on it decides nothing', async (tc) => {
      const { t, teams } = await start(tc, backend);
      const { key } = await t.workspace({ config: `${CONFIG}teams: { channel: "${OPS}" }\n` });
      const id = await submit(t, key, { memo: 'x'.repeat(600) });
      const [posted] = await channelPosts(t, id);
      const card = teams.cardOf(posted!);
      assert.deepEqual(actionsOf(card), ['Review']);
      assert.equal(card.actions[0].url, `${t.service.ctx.publicUrl}/app/holds/${id}`);
      const answer = await pressInChannel(t, teams, posted!, 'approve', id, ANN);
      assert.equal(answer.value.code, 'review_required');
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.approvals.received, 0);
    });

    test('a post Teams refuses is tried again until it is taken', async (tc) => {
      const { t, teams } = await start(tc, backend);
      const { key } = await t.workspace({ config: `${CONFIG}teams: { channel: "${OPS}" }\n` });
      teams.fail({ status: 503, times: 2 });
      const id = await submit(t, key);
      const [posted] = await channelPosts(t, id);
      assert.equal(channelOf(posted!), OPS);
      assert.deepEqual(actionsOf(teams.cardOf(posted!)), ['approve', 'reject']);
    });

    test("a member's card that waited for their quiet hours and finds them removed goes nowhere, not to the channel", async (tc) => {
      const { t, teams } = await start(tc, backend);
      // Quiet from an hour ago to an hour from now (UTC); the admin's default deadline (4 h) comes later.
      const clock = (at: number) => new Date(at).toISOString().slice(11, 16);
      const now = t.clock.now();
      const ann = `{ email: ann@acme.test, name: Ann, role: admin, teams_user_id: ${ANN}, channels: [teams], time_zone: UTC, quiet_hours: { from: "${clock(now - 3_600_000)}", to: "${clock(now + 3_600_000)}" } }`;
      const admin = '{ email: admin@acme.test, name: Admin, role: admin }';
      const { workspace, key } = await t.workspace({
        config: `notifications: { digest_minutes: 0 }\nteams: { channel: "${OPS}" }\nmembers:\n  - ${admin}\n  - ${ann}\ntools: [{ connection: SDK, tool: pay, classification: approval }]\n`,
      });
      const id = await submit(t, key);
      const channelPost = (c: { kind: string; body: any }) =>
        c.kind === 'createConversation' && c.body.isGroup === true && JSON.stringify(c.body).includes(id);
      await teams.waitFor('createConversation', 1, channelPost);

      await apply(t, workspace, `members:\n  - ${admin}\n`);
      await t.clock.advance(3_600_000 + 60_000);
      await notificationsDone(t);
      const annJobs = await t.service.ctx.db.all<{ state: string }>(
        "SELECT state FROM notifications WHERE hold_id = $1 AND channel = 'teams' AND member_id IS NOT NULL",
        [id],
      );
      assert.deepEqual(
        annJobs.map((job) => job.state),
        ['skipped'],
      );
      assert.equal(teams.calls.filter(channelPost).length, 1, 'one post in the channel');
      assert.equal(teams.calls.filter((c) => c.kind === 'createConversation' && !c.body.isGroup).length, 0);
    });

    test("the app's Teams page sets the channel through the same apply, with evidence", async (tc) => {
      const { t } = await start(tc, backend);
      const { workspace } = await t.workspace({ config: CONFIG });
      const app = appClient(t);
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const page = await app.get(admin, '/app/admin/teams');
      assert.equal(page.status, 200);
      assert.match(page.text, /<h1>Teams<\/h1>/);
      assert.match(page.text, /href="\/app\/admin\/teams"/, 'in the navigation');

      const before = (await appliedChanges(t, workspace)).length;
      const bad = await app.post(admin, '/app/admin/teams', { channel: '<b>General</b>' });
      assert.equal(bad.status, 422);
      assert.match(bad.text, /id="t-channel-error">must be a Teams channel id/);
      assert.ok(!bad.text.includes('<b>General</b>'), 'the value is escaped');
      assert.equal((await appliedChanges(t, workspace)).length, before, 'nothing applied');
      assert.equal((await exportConfig(t.service.ctx, workspace)).teams, undefined);

      const saved = await app.post(admin, '/app/admin/teams', { channel: ` ${OPS} ` });
      assert.equal(saved.status, 303, saved.text);
      assert.equal(saved.location, '/app/admin/teams');
      assert.equal(saved.notice, 'saved');
      assert.deepEqual(
        { ...(await appliedChanges(t, workspace)).at(-1), version: undefined },
        {
          teams: { channel: OPS },
          changed_by: 'Admin (admin@acme.test)',
          items_changed: ['teams'],
          version: undefined,
        },
      );
      assert.ok((await app.get(admin, '/app/admin/teams')).text.includes(`value="${OPS}"`));

      const cleared = await app.post(admin, '/app/admin/teams', { channel: '' });
      assert.equal(cleared.status, 303);
      assert.equal((await exportConfig(t.service.ctx, workspace)).teams, undefined);

      const approver = await app.signIn(workspace, 'ann@acme.test');
      assert.notEqual((await app.get(approver, '/app/admin/teams')).status, 200, 'admins only');
      const anonymous = await app.post(null, '/app/admin/teams', { channel: OPS });
      assert.notEqual(anonymous.status, 303, 'no change without a session');
    });
  });
}
