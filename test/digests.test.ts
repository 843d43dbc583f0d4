/**
 * Approvers are not flooded (issue 39: an escalation wave sent 89 separate e-mails within a minute).
 * On both backends, with a clock the tests move and real peers on loopback (SMTP server, Slack and
 * SMS stand-ins): a member's requests and reminders within their digest window go as one message per
 * channel, each hold with its own decision link deciding that hold only; urgent holds and four-eyes
 * seconds go at once; what is collected survives a restart; subjects carry the values and the reason.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { twilioSignature } from '../src/channels/sms.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { appClient, formFields } from './support/app-client.ts';
import { type Backend, backends } from './support/backends.ts';
import { escalationWaveMails } from './support/escalation-wave.ts';
import { call, submission } from './support/http.ts';
import { startSlackStub, startSmsStub } from './support/provider-stub.ts';
import {
  decideAs,
  notificationsDone,
  startTestService,
  TestClock,
  type TestService,
} from './support/service.ts';
import { startSmtp } from './support/smtp.ts';

const MIN = 60_000;
/** A Wednesday, 10:00 UTC. */
const T0 = Date.parse('2026-11-25T10:00:00Z');
const PAYMENT = { amount: 31496.75, currency: 'EUR', payee: 'Globex', memo: 'Q4 licences' };
const DECISION_LINK = /\/d\/[A-Za-z0-9_-]{43}$/;

/** Peers and a service on a clock standing at T0; closed after the test. */
async function start(tc: TestContext, backend: Backend, clock = new TestClock({ at: T0 })) {
  const smtp = await startSmtp();
  const slack = await startSlackStub();
  const sms = await startSmsStub();
  const env = {
    ...smtp.env,
    ...slack.env,
    SLACK_SIGNING_SECRET: 'x'.repeat(32),
    ...sms.env,
    SMS_REPLIES: 'true',
  };
  const t = await startTestService(backend, { clock, env: { ...env, NOTIFY_RETRY_SCALE: '0.001' } });
  tc.after(async () => {
    await t.close();
    await Promise.all([smtp.close(), slack.close(), sms.close()]);
  });
  return { t, smtp, slack, sms, env };
}

/** A text from `from` to the service, signed as the provider signs it. */
async function replyBySms(
  t: TestService,
  sms: { authToken: string; from: string },
  from: string,
  body: string,
) {
  const params = { MessageSid: 'SM1', From: from, To: sms.from, Body: body, NumMedia: '0' };
  const response = await fetch(`${t.url}/sms/inbound`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(sms.authToken, `${t.url}/sms/inbound`, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  return { status: response.status, text: await response.text() };
}

/** How many decision links each channel has minted for the member: only those a message shows. */
async function linksMinted(t: TestService, email: string) {
  const rows = await t.service.ctx.db.all<{ channel: string; count: unknown }>(
    `SELECT d.channel AS channel, COUNT(*) AS count FROM decision_tokens d
     JOIN members m ON m.id = d.member_id WHERE m.email = $1 GROUP BY d.channel`,
    [email],
  );
  return Object.fromEntries(rows.map((row) => [row.channel, Number(row.count)]));
}

/** Admin and Ann (e-mail, Slack and SMS); payments go to the admin and escalate to Ann after an hour. */
const file = (
  extra = '',
  rule = 'approvers: [admin@acme.test], timeout_minutes: 240, escalate: [{ after: 1h, to: [ann@acme.test] }]',
) => `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, slack_user_id: U0ANN, phone: "+15550100", channels: [email, slack, sms] }
tools:
  - { connection: SDK, tool: payments.send, classification: approval }
  - { connection: SDK, tool: payments.rush, classification: approval }
rules:
  - { name: Large payments need two approvers, tool: payments.send, effect: approval, ${rule} }
${extra}`;

async function submit(
  t: TestService,
  key: string,
  args: Record<string, unknown> = PAYMENT,
  tool = 'payments.send',
) {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: tool, arguments: args }),
  });
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

/** POSTs a decision link's form, as the page's buttons do. */
async function decideByLink(link: string, verdict: 'approve' | 'reject') {
  const body = new URLSearchParams({ verdict }).toString();
  const response = await fetch(link, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
    redirect: 'manual',
  });
  await response.text();
  return response.status;
}

/** The holds approved so far (read from storage: the wave used most of the minute's API requests). */
const approvedHolds = async (t: TestService) =>
  (
    await t.service.ctx.db.all<{ id: string }>("SELECT id FROM holds WHERE status = 'approved' ORDER BY id")
  ).map((row) => row.id);

/** The links of a mail that open one hold's decision page each. */
const decisionLinks = (t: TestService, links: string[]) =>
  links.filter((link) => link.startsWith(`${t.url}/d/`) && DECISION_LINK.test(link));

for (const backend of backends) {
  describe(`digests on ${backend.name}`, { skip: backend.skip }, () => {
    test('an escalation wave of 100 holds to one member sends one e-mail, one Slack message and one text; each link decides its hold', async (tc) => {
      const { t, smtp, slack, sms } = await start(tc, backend);
      const { workspace, key } = await t.workspace({ config: file() });
      const ids: string[] = [];
      for (let i = 0; i < 100; i++) ids.push(await submit(t, key, { ...PAYMENT, amount: 1000 + i }));
      await notificationsDone(t);
      // Collected for the admin's digest: nothing goes before the window closes.
      assert.equal(smtp.messages.length, 0);

      // An hour later every hold escalates to Ann within the same minute; the admin's digest has gone.
      await t.clock.advance(60 * MIN);
      await notificationsDone(t);
      assert.equal(smtp.messagesTo('admin@acme.test').length, 1);
      assert.equal(smtp.messagesTo('ann@acme.test').length, 0);
      assert.equal(sms.calls.length, 0);
      // One hold is decided before Ann's digest goes: it is left out.
      assert.equal((await decideAs(t, workspace.id, ids[0]!, 'approve')).outcome, 'recorded');

      await t.clock.advance(5 * MIN);
      await notificationsDone(t);
      const mails = smtp.messagesTo('ann@acme.test');
      assert.equal(mails.length, 1, 'one e-mail for the wave');
      const [digest] = mails;
      assert.equal(digest!.subject, '99 holds wait for you — 99 escalated, due from 14:00 UTC');
      assert.match(
        digest!.body,
        /Approve payments\.send 1,001 EUR to Globex — Large payments need two approvers; escalated to you/,
      );
      assert.doesNotMatch(digest!.body, /Approve payments\.send 1,000 EUR/);
      const links = decisionLinks(t, digest!.links);
      assert.equal(links.length, 99, 'a decision link per hold');
      const posts = slack.calls.filter((c) => c.api === 'chat.postMessage' && c.body.channel === 'U0ANN');
      assert.equal(posts.length, 1, 'one Slack message');
      assert.match(posts[0]!.body.text, /^99 holds wait for you/);
      assert.ok(
        !JSON.stringify(posts[0]!.body.blocks).includes('"action_id":"approve"'),
        'no one-click decision on a summary',
      );
      assert.equal(sms.calls.length, 1, 'one text');
      assert.match(sms.calls[0]!.form.Body!, /^99 holds wait for you .*Open your inbox: http.*\/app\/inbox$/);
      // A link for each line shown: every line of the mail, the 20 of the Slack message, none in the text.
      assert.deepEqual(await linksMinted(t, 'ann@acme.test'), { email: 99, slack: 20 });

      // A link decides its own hold, and no other.
      assert.deepEqual(await approvedHolds(t), [ids[0]]);
      assert.equal(await decideByLink(links[2]!, 'approve'), 200);
      const approved = (await approvedHolds(t)).filter((id) => id !== ids[0]);
      assert.equal(approved.length, 1);
      assert.equal(await decideByLink(links[3]!, 'reject'), 200);
      const rejected = await t.service.ctx.db.all<{ id: string }>(
        "SELECT id FROM holds WHERE status = 'rejected'",
      );
      assert.equal(rejected.length, 1);
      assert.notEqual(rejected[0]!.id, approved[0]);
    });

    test('the bench measure: an escalation wave is a mail per hold without a window, one mail with it', async () => {
      const without = await escalationWaveMails(backend, { holds: 20, digestMinutes: 0 });
      assert.deepEqual([without.mails, without.links], [20, 20]);
      const withWindow = await escalationWaveMails(backend, { holds: 20 });
      assert.deepEqual([withWindow.mails, withWindow.links], [1, 20]);
      assert.equal(withWindow.subjects.length, 1);
      // The wave runs on the wall clock: a deadline on another day than today's is said with its date.
      assert.match(
        withWindow.subjects[0]!,
        /^20 holds wait for you — 20 escalated, due from (\d{4}-\d\d-\d\d )?\d\d:\d\d UTC$/,
      );
    });

    test('urgent holds and four-eyes seconds go at once; a digest of one is the normal message', async (tc) => {
      const { t, smtp } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: file(
          '  - { name: Rush payments, tool: payments.rush, effect: approval, approvers: [ann@acme.test], timeout_minutes: 10 }',
          'approvers: [admin@acme.test, ann@acme.test], approvals_required: 2, timeout_minutes: 240, remind: { every: 1h }',
        ),
      });
      // The requests and reminders Ann got (not the outcome mails).
      const annsMail = () =>
        smtp
          .messagesTo('ann@acme.test')
          .map((mail) => mail.subject)
          .filter((subject) => subject.startsWith('Approve '));
      // Due in 10 minutes: urgent, at once.
      await submit(t, key, { amount: 5, currency: 'EUR', payee: 'Initech Ltd' }, 'payments.rush');
      await notificationsDone(t);
      assert.deepEqual(annsMail(), ['Approve payments.rush 5 EUR to "Initech Ltd" — Rush payments']);

      // A four-eyes hold: collected for both, then each gets a digest of one, which is the normal request.
      const id = await submit(t, key);
      await notificationsDone(t);
      assert.equal(annsMail().length, 1);
      await t.clock.advance(5 * MIN);
      await notificationsDone(t);
      const request = smtp.messagesTo('ann@acme.test')[1]!;
      assert.equal(
        request.subject,
        'Approve payments.send 31,496.75 EUR to Globex — Large payments need two approvers',
      );
      assert.equal(decisionLinks(t, request.links).length, 1);

      // Once the admin approved, the reminder asks Ann for the second approval: at once, not collected.
      assert.equal((await decideAs(t, workspace.id, id, 'approve')).outcome, 'recorded');
      await t.clock.advance(55 * MIN);
      await notificationsDone(t);
      assert.deepEqual(annsMail().slice(2), [
        'Approve payments.send 31,496.75 EUR to Globex — Large payments need two approvers; reminder, 3 h left; 1 of 2 approvals in',
      ]);
    });

    test('a digest of one text is the ordinary text, with the reply code that decides its hold', async (tc) => {
      const { t, sms } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: file('', 'approvers: [ann@acme.test], timeout_minutes: 240'),
      });
      const id = await submit(t, key);
      await notificationsDone(t);
      assert.equal(sms.calls.length, 0, 'collected for the window');
      await t.clock.advance(5 * MIN);
      await notificationsDone(t);
      assert.equal(sms.calls.length, 1);
      const text = sms.calls[0]!.form.Body!;
      const match = /^Approval needed \(SDK\): .+ \S+\/d\/\S+ Or reply YES (\d{4}) \/ NO \1\.$/.exec(text);
      assert.ok(match, text);
      const answer = await replyBySms(t, sms, '+15550100', `YES ${match[1]}`);
      assert.equal(answer.status, 200, answer.text);
      const hold = await t.service.ctx.db.one<{ status: string }>(
        'SELECT status FROM holds WHERE workspace_id = $1 AND id = $2',
        [workspace.id, id],
      );
      assert.equal(hold?.status, 'approved');
    });

    test('collected requests survive a restart: the next service sends the digest', async (tc) => {
      const clock = new TestClock({ at: T0 });
      const { t, smtp, env } = await start(tc, backend, clock);
      const { key } = await t.workspace({ config: file() });
      for (let i = 0; i < 3; i++) await submit(t, key);
      await t.stop();
      const again = await startTestService(backend, { storage: t.storage, clock, env });
      tc.after(() => again.stop());
      await clock.advance(5 * MIN);
      await notificationsDone(again);
      const mails = smtp.messagesTo('admin@acme.test');
      assert.equal(mails.length, 1);
      assert.match(mails[0]!.subject, /^3 holds wait for you — due from 14:00 UTC$/);
      assert.equal(decisionLinks(again, mails[0]!.links).length, 3);
    });

    test("settings: the workspace window and a member's own, checked and exported", async (tc) => {
      const { t, smtp } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: file(
          'notifications: { digest_minutes: 10 }',
          'approvers: [admin@acme.test, ann@acme.test], timeout_minutes: 240',
        ).replace('role: approver,', 'role: approver, digest_minutes: 0,'),
      });
      const exported = await exportConfig(t.service.ctx, workspace);
      assert.deepEqual(exported.notifications, { digest_minutes: 10 });
      assert.equal(exported.members![1]!.digest_minutes, 0);
      assert.deepEqual(
        (await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(exported)))).items_changed,
        [],
      );
      for (const bad of ['notifications: { digest_minutes: 61 }', 'notifications: { digest_minutes: 1.5 }'])
        assert.throws(
          () => parseConfig(bad),
          /notifications\.digest_minutes: must be a whole number of minutes from 0 to 60/,
        );

      // Ann sets her own window on her settings page; a value out of range is refused beside its field.
      const { get, post, signIn } = appClient(() => t);
      const ann = await signIn(workspace, 'ann@acme.test');
      const form = async () =>
        Object.fromEntries(formFields((await get(ann, '/app/settings')).text, '/app/settings'));
      const annsWindow = async () =>
        (await exportConfig(t.service.ctx, workspace)).members!.find((m) => m.email === 'ann@acme.test')!
          .digest_minutes;
      const refused = await post(ann, '/app/settings', { ...(await form()), digest_minutes: '61' });
      assert.equal(refused.status, 422);
      assert.match(refused.text, /must be a whole number of minutes from 0 to 60/);
      assert.equal(await annsWindow(), 0);
      assert.equal((await post(ann, '/app/settings', { ...(await form()), digest_minutes: '' })).status, 303);
      assert.equal(await annsWindow(), undefined);
      assert.equal(
        (await post(ann, '/app/settings', { ...(await form()), digest_minutes: '0' })).status,
        303,
      );
      assert.equal(await annsWindow(), 0);

      // Ann's own 0: at once; the admin's is the workspace's 10 minutes.
      await submit(t, key);
      await notificationsDone(t);
      assert.equal(smtp.messagesTo('ann@acme.test').length, 1);
      assert.equal(smtp.messagesTo('admin@acme.test').length, 0);
      await t.clock.advance(10 * MIN);
      await notificationsDone(t);
      assert.equal(smtp.messagesTo('admin@acme.test').length, 1);
    });
  });
}
