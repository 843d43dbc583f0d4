/**
 * Notification channels end to end (interface.md: humans decide through e-mail link, SMS, Slack):
 * each against a real protocol peer on loopback — an SMTP server, a stand-in for the Slack Web API,
 * a stand-in for a Twilio-compatible SMS API — and the callbacks signed the way Slack and Twilio
 * sign them. Decision links, Slack buttons and SMS replies decide once; bad, stale and replayed
 * callbacks change nothing; four-eyes across channels; retries until the peer is back.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { listHoldDecisions } from '../src/store/hold-decisions.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { verifiedEvidence } from './support/app-client.ts';
import { type Backend, backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import {
  type SlackCall,
  type SlackStub,
  type SmsStub,
  startSlackStub,
  startSmsStub,
} from './support/provider-stub.ts';
import { notificationsDone, startTestService, type TestService } from './support/service.ts';
import { type Mail, parseMail, startSmtp, type TestSmtp } from './support/smtp.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { until } from './support/wait.ts';

const SIGNING_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const BRAND = 'Globex Approvals';
const LINK = /\/d\/[A-Za-z0-9_-]{43}$/;
const ARGS = { customer: 'Globex', amount: 1200, currency: 'EUR' };
const SUMMARY = 'send_invoice(customer="Globex", amount=1200, currency="EUR")';

/**
 * The workspace: a name (the branding of every message), members, one tool that needs approval. Each
 * request goes at once (no digest window): these tests are about single messages (test/digests.test.ts).
 */
const workspaceConfig = (members: string, rule: string) => `name: ${BRAND}
notifications: { digest_minutes: 0 }
members:
${members}
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
rules:
  - { name: Invoices, tool: send_invoice, effect: approval, ${rule} }
`;

// ---------------------------------------------------------------------------------------------
// Helpers

interface Peers {
  t: TestService;
  smtp: TestSmtp;
  /** Between the service and the SMTP server: cut it to take e-mail away. */
  mailLink: Awaited<ReturnType<typeof startTcpProxy>>;
  slack: SlackStub;
  sms: SmsStub;
}

/** A service on `backend` wired to fresh peers, every channel on and fast retries; closed after the test. */
async function start(tc: TestContext, backend: Backend, env: Record<string, string> = {}): Promise<Peers> {
  const smtp = await startSmtp();
  const mailLink = await startTcpProxy('127.0.0.1', smtp.port);
  const slack = await startSlackStub();
  const sms = await startSmsStub();
  const t = await startTestService(backend, {
    env: {
      SMTP_URL: `smtp://127.0.0.1:${mailLink.port}`,
      MAIL_FROM: 'Approvals <approvals@acme.test>',
      ...slack.env,
      SLACK_SIGNING_SECRET: SIGNING_SECRET,
      ...sms.env,
      SMS_REPLIES: 'true',
      NOTIFY_RETRY_SCALE: '0.001',
      ...env,
    },
  });
  tc.after(async () => {
    await t.close();
    await Promise.all([mailLink.close(), smtp.close(), slack.close(), sms.close()]);
  });
  return { t, smtp, mailLink, slack, sms };
}

/** Submits a hold through the API; it must wait for people. */
async function submit(t: TestService, key: string): Promise<string> {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: 'send_invoice', arguments: ARGS }),
  });
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

const record = async (t: TestService, key: string, id: string) =>
  (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;

const decisionsOf = async (t: TestService, holdId: string) =>
  (await listHoldDecisions(t.service.ctx.db, holdId)).map((d) => `${d.email} ${d.verdict} ${d.channel}`);

/** The evidence entries of one hold, oldest first. */
async function evidenceOf(t: TestService, workspace: Workspace, holdId: string) {
  const rows = await t.service.ctx.db.all<{ type: string; data: string }>(
    'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
    [workspace.id],
  );
  return rows
    .map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, any> }))
    .filter((entry) => entry.data.hold === holdId);
}

/** The notification jobs of a hold, as stored. */
const jobsOf = (t: TestService, holdId: string) =>
  t.service.ctx.db.all<{
    channel: string;
    kind: string;
    state: string;
    attempts: number;
    error: string | null;
  }>(
    `SELECT channel, kind, state, attempts, last_error AS error FROM notifications
     WHERE hold_id = $1 ORDER BY created_at, id`,
    [holdId],
  );

/** Everything a callback that must change nothing could have changed. */
async function snapshot(peers: Peers, key: string, holdId: string) {
  const { t } = peers;
  const hold = await record(t, key, holdId);
  return {
    status: hold.status,
    approvals: hold.approvals,
    decision: hold.decision,
    decisions: await decisionsOf(t, holdId),
    evidence: await verifiedEvidence(t, key),
    slackCalls: peers.slack.calls.length,
    mails: peers.smtp.messages.length,
  };
}

/** The text and the HTML part of a multipart/alternative mail, decoded. */
function partsOf(mail: Mail): { text: string; html: string } {
  const type = mail.headers['content-type'] ?? '';
  assert.match(type, /^multipart\/alternative/i);
  const boundary = /boundary="?([^";]+)"?/i.exec(type)![1]!;
  const parts = mail.raw
    .split(`--${boundary}`)
    .slice(1)
    .filter((part) => !part.startsWith('--'))
    .map((part) => parseMail(part.replace(/^\r?\n/, ''), mail));
  const part = (kind: string) => {
    const found = parts.filter((p) => p.headers['content-type']?.toLowerCase().startsWith(kind));
    assert.equal(found.length, 1, `one ${kind} part`);
    return found[0]!.body;
  };
  return { text: part('text/plain'), html: part('text/html') };
}

/** The one decision link of a message. */
function linkIn(t: TestService, links: string[]): string {
  const found = links.filter((link) => link.startsWith(`${t.url}/d/`));
  assert.equal(found.length, 1, `one decision link in ${links.join(' ')}`);
  assert.match(found[0]!, LINK);
  return found[0]!;
}

/** GET or POST a decision link without a session, as a mail client's browser would. */
async function openLink(link: string, verdict?: 'approve' | 'reject', comment?: string) {
  const form = new URLSearchParams();
  if (verdict) form.set('verdict', verdict);
  if (comment) form.set('comment', comment);
  const response = await fetch(
    link,
    verdict
      ? {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form.toString(),
          redirect: 'manual',
        }
      : { redirect: 'manual' },
  );
  return { status: response.status, text: await response.text() };
}

const hasForm = (page: string) => /<form method="post" action="\/d\//.test(page);

/**
 * A Slack button click as Slack sends it: `payload=<json>` form-encoded, signed with v0 over
 * `v0:<timestamp>:<raw body>`. `send()` posts exactly these bytes and headers (again for a replay).
 */
function slackClick(
  t: TestService,
  input: {
    user: string;
    holdId: string;
    action?: 'approve' | 'reject';
    at?: number;
    secret?: string;
    /** Sent instead of the click's own payload (hostile JSON, well signed). */
    payload?: unknown;
  },
) {
  const click = {
    type: 'block_actions',
    user: { id: input.user, username: input.user.toLowerCase(), team_id: 'T0ACME' },
    team: { id: 'T0ACME', domain: 'acme' },
    api_app_id: 'A0APPROVALS',
    trigger_id: `${Date.now()}.1.${randomBytes(8).toString('hex')}`,
    container: { type: 'message', message_ts: '1700000001.000001', channel_id: 'D0SOME' },
    response_url: 'https://hooks.slack.com/actions/T0ACME/1/abc',
    actions: [
      {
        type: 'button',
        block_id: 'decision',
        action_id: input.action ?? 'approve',
        value: input.holdId,
        action_ts: `${Math.floor(Date.now() / 1000)}.000100`,
      },
    ],
  };
  const payload = 'payload' in input ? input.payload : click;
  const raw = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const timestamp = String(Math.floor((input.at ?? t.clock.now()) / 1000));
  const signature = `v0=${createHmac('sha256', input.secret ?? SIGNING_SECRET)
    .update(`v0:${timestamp}:${raw}`)
    .digest('hex')}`;
  const headers = {
    'content-type': 'application/x-www-form-urlencoded',
    'x-slack-request-timestamp': timestamp,
    'x-slack-signature': signature,
  };
  return {
    async send() {
      const response = await fetch(`${t.url}/slack/interactions`, { method: 'POST', headers, body: raw });
      return { status: response.status, text: await response.text() };
    },
  };
}

/** X-Twilio-Signature: base64 HMAC-SHA1 of the URL followed by each parameter (sorted) as name + value. */
function twilioSignature(authToken: string, url: string, params: Record<string, string>) {
  const data = Object.keys(params)
    .sort()
    .reduce((text, name) => text + name + params[name], url);
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/**
 * An inbound SMS as the provider posts it to `/sms/inbound`, signed with the auth token over
 * PUBLIC_URL + path. `sign` changes the key or the URL signed over (null: no signature); `tamper`
 * changes fields after signing. `send()` posts exactly these bytes and headers.
 */
function inboundSms(
  peers: Peers,
  input: {
    from: string;
    body: string;
    messageSid?: string;
    sign?: { token?: string; url?: string } | null;
    tamper?: Record<string, string>;
  },
) {
  const { t, sms } = peers;
  const params: Record<string, string> = {
    MessageSid: input.messageSid ?? `SM${randomBytes(16).toString('hex')}`,
    AccountSid: sms.accountSid,
    From: input.from,
    To: sms.from,
    Body: input.body,
    NumMedia: '0',
  };
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  if (input.sign !== null) {
    headers['x-twilio-signature'] = twilioSignature(
      input.sign?.token ?? sms.authToken,
      input.sign?.url ?? `${t.url}/sms/inbound`,
      params,
    );
  }
  const raw = new URLSearchParams({ ...params, ...input.tamper }).toString();
  return {
    async send() {
      const response = await fetch(`${t.url}/sms/inbound`, { method: 'POST', headers, body: raw });
      return {
        status: response.status,
        type: response.headers.get('content-type') ?? '',
        text: await response.text(),
      };
    },
  };
}

const twiml = (message: string) =>
  `<?xml version="1.0" encoding="UTF-8"?><Response><Message>${message}</Message></Response>`;

/** The blocks of a Slack message by type. */
const blocksOf = (message: { blocks: any[] }, type: string) =>
  message.blocks.filter((block: any) => block.type === type);

/** What a Slack message must look like while its hold waits: the buttons carry the hold id. */
function checkWaitingMessage(call: SlackCall, holdId: string, token: string) {
  assert.equal(call.headers.authorization, `Bearer ${token}`);
  assert.match(String(call.headers['content-type']), /^application\/json/);
  const message = call.body;
  // The title: the deciding values (the amount), the rule, and how far a four-eyes hold has come.
  assert.match(message.text, /^Approve send_invoice 1,200 EUR — Invoices(; 1 of 2 approvals in)?$/);
  const text = JSON.stringify(message.blocks);
  assert.ok(text.includes('send_invoice'), 'names the tool');
  assert.ok(text.includes('SDK'), 'names the connection');
  assert.ok(text.includes(JSON.stringify(SUMMARY).slice(1, -1)), 'summarizes the arguments');
  assert.ok(text.includes(BRAND), 'carries the workspace name');
  const [actions, ...more] = blocksOf(message, 'actions');
  assert.equal(more.length, 0);
  const buttons = Object.fromEntries(actions.elements.map((button: any) => [button.action_id, button]));
  assert.equal(buttons.approve.type, 'button');
  assert.equal(buttons.approve.value, holdId);
  assert.equal(buttons.reject.type, 'button');
  assert.equal(buttons.reject.value, holdId);
  return buttons as Record<string, any>;
}

/** What a Slack message must look like once its hold is decided: the outcome, no buttons. */
function checkOutcomeMessage(message: { text: string; blocks: any[] }, outcome: RegExp) {
  assert.equal(blocksOf(message, 'actions').length, 0, 'no buttons any more');
  assert.match(message.text, outcome);
  assert.match(JSON.stringify(message.blocks), outcome);
}

// ---------------------------------------------------------------------------------------------

for (const backend of backends) {
  describe(`notification channels (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    test('e-mail: one mail per e-mail approver, with text and HTML, the action and a decision link', async (tc) => {
      const peers = await start(tc, backend);
      const { t, smtp, slack } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: bob@acme.test, name: Bob Approver, role: approver, channels: [email, slack], slack_user_id: U0BOB }
  - { email: carl@acme.test, name: Carl Chat, role: approver, channels: [slack], slack_user_id: U0CARL }
  - { email: nora@acme.test, name: Nora Notasked, role: approver, channels: [email] }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer, channels: [email] }`,
          'approvers: [ada@acme.test, bob@acme.test, carl@acme.test, vic@acme.test]',
        ),
      });
      const holdId = await submit(t, key);

      const ada = await smtp.next('ada@acme.test');
      const bob = await smtp.next('bob@acme.test');
      // Everything else the hold causes has gone out too (Slack for Bob and Carl); then count.
      await slack.waitFor('chat.postMessage', 2);
      await until('every job of the hold to be done', async () =>
        (await jobsOf(t, holdId)).every((job) => job.state === 'sent') ? true : undefined,
      );
      await notificationsDone(t);
      assert.deepEqual(
        smtp.messages.map((mail) => mail.to.join()).sort(),
        ['ada@acme.test', 'bob@acme.test'],
        'one mail per approver with e-mail among their channels; none to Carl, Nora or a viewer',
      );

      for (const mail of [ada, bob]) {
        assert.equal(mail.from, 'approvals@acme.test');
        assert.equal(mail.subject, 'Approve send_invoice 1,200 EUR — Invoices');
        const { text, html } = partsOf(mail);
        const link = linkIn(t, mail.links);
        assert.match(text, /^"Billing bot" wants to run send_invoice on SDK\./);
        assert.ok(text.includes(SUMMARY), `the text summarizes the arguments: ${text}`);
        assert.ok(text.split(/\r?\n/).includes(link), 'the link on a line of its own');
        assert.ok(text.includes(`— ${BRAND}`), 'signed with the workspace name');
        assert.match(html, /^<!doctype html>/i);
        assert.ok(html.includes(`<strong>${BRAND}</strong>`), 'branded with the workspace name');
        assert.ok(html.includes('<code>send_invoice</code>'));
        assert.ok(html.includes('<strong>SDK</strong>'));
        assert.ok(html.includes(SUMMARY.replaceAll('"', '&quot;')), 'the summary, escaped');
        assert.ok(html.includes(`href="${link}"`), 'the same link in the HTML');
      }
      const adaLink = linkIn(t, ada.links);
      const bobLink = linkIn(t, bob.links);
      assert.notEqual(adaLink, bobLink, 'a link of their own for each approver');

      // Opening the link shows the action and a form, and decides nothing (however often).
      for (let i = 0; i < 2; i++) {
        const page = await openLink(adaLink);
        assert.equal(page.status, 200);
        assert.match(page.text, /Approve this action\?/);
        assert.match(page.text, /For Ada Admin/);
        assert.match(page.text, /send_invoice/);
        assert.match(page.text, /Globex/);
        assert.ok(hasForm(page.text));
        assert.match(page.text, /name="verdict" value="approve"/);
        assert.match(page.text, /name="verdict" value="reject"/);
      }
      assert.equal((await record(t, key, holdId)).status, 'pending');
      assert.deepEqual(await decisionsOf(t, holdId), []);

      const decided = await openLink(adaLink, 'approve', 'fine by me');
      assert.equal(decided.status, 200);
      assert.match(decided.text, /You approved\. The action is approved\./);
      const body = await record(t, key, holdId);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.verdict, 'approve');
      assert.equal(body.decision.channel, 'email');
      assert.equal(body.decision.reason, 'fine by me');

      // The outcome follows to everyone who was asked by e-mail.
      for (const address of ['ada@acme.test', 'bob@acme.test']) {
        const outcome = await smtp.next(address);
        assert.equal(
          outcome.subject,
          'Approved: send_invoice(customer="Globex", amount=1200, currency="EUR") on SDK',
        );
        const { text, html } = partsOf(outcome);
        assert.match(text, /^Approved \(decided via email\)\./);
        assert.ok(text.includes(SUMMARY));
        assert.ok(text.includes(`— ${BRAND}`));
        assert.ok(html.includes(`<strong>${BRAND}</strong>`));
        assert.deepEqual(
          outcome.links.filter((l) => l.includes('/d/')),
          [],
          'no decision link in the outcome',
        );
      }

      // Closed everywhere: the used link and Bob's unused one answer "already decided", without a form.
      for (const link of [adaLink, bobLink]) {
        const page = await openLink(link);
        assert.equal(page.status, 200);
        assert.match(page.text, /<title>Already decided/);
        assert.match(page.text, /This action was approved\./);
        assert.ok(!hasForm(page.text), 'no form on a closed link');
      }
      const before = await snapshot(peers, key, holdId);
      const again = await openLink(adaLink, 'reject');
      assert.equal(again.status, 409);
      const late = await openLink(bobLink, 'reject');
      assert.equal(late.status, 409);
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), before, 'a second POST changes nothing');
      assert.deepEqual(await decisionsOf(t, holdId), ['ada@acme.test approve email']);
    });

    test('Slack: a waiting hold posts Block Kit buttons to the approver and to the channel', async (tc) => {
      const peers = await start(tc, backend, { SLACK_CHANNEL: 'C0APPROVALS' });
      const { t, slack } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: dana@acme.test, name: Dana Slack, role: approver, slack_user_id: U0DANA, channels: [slack] }
  - { email: eli@acme.test, name: Eli Mail, role: approver, slack_user_id: U0ELI, channels: [email] }`,
          'approvers: [dana@acme.test, eli@acme.test]',
        ),
      });
      const holdId = await submit(t, key);

      const posts = await slack.waitFor('chat.postMessage', 2);
      await notificationsDone(t);
      assert.equal(slack.calls.length, 2, 'one post to Dana, one to the channel; none to Eli (e-mail only)');
      const byTarget = Object.fromEntries(posts.map((post) => [post.body.channel, post]));
      assert.deepEqual(Object.keys(byTarget).sort(), ['C0APPROVALS', 'U0DANA']);

      const dm = checkWaitingMessage(byTarget.U0DANA!, holdId, slack.token);
      assert.match(dm.open.url, new RegExp(`^${t.url}${LINK.source}`), 'Dana gets her decision link');
      const page = await openLink(dm.open.url);
      assert.match(page.text, /For Dana Slack/);
      const channel = checkWaitingMessage(byTarget.C0APPROVALS!, holdId, slack.token);
      assert.equal(channel.open, undefined, 'no personal link in a shared channel');

      const jobs = await jobsOf(t, holdId);
      assert.deepEqual(
        jobs.filter((job) => job.channel === 'slack').map((job) => [job.kind, job.state]),
        [
          ['request', 'sent'],
          ['request', 'sent'],
        ],
      );
      assert.equal((await record(t, key, holdId)).status, 'pending');
    });

    test('Slack: a signed click decides with channel slack and every posted message shows the outcome', async (tc) => {
      const peers = await start(tc, backend, { SLACK_CHANNEL: 'C0APPROVALS' });
      const { t, slack } = peers;
      const { workspace, key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: dana@acme.test, name: Dana Slack, role: approver, slack_user_id: U0DANA, channels: [slack] }`,
          'approvers: [dana@acme.test]',
        ),
      });
      const holdId = await submit(t, key);
      const posts = await slack.waitFor('chat.postMessage', 2);
      const evidenceBefore = await verifiedEvidence(t, key);

      const click = await slackClick(t, { user: 'U0DANA', holdId }).send();
      assert.equal(click.status, 200);
      const body = await record(t, key, holdId);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.verdict, 'approve');
      assert.equal(body.decision.channel, 'slack');
      assert.deepEqual(await decisionsOf(t, holdId), ['dana@acme.test approve slack']);
      assert.equal(await verifiedEvidence(t, key), evidenceBefore + 1);
      const [entry] = (await evidenceOf(t, workspace, holdId)).filter((e) => e.type === 'hold.approved');
      assert.equal(entry!.data.channel, 'slack');
      assert.equal(entry!.data.member.email, 'dana@acme.test');

      // Each posted message is updated in place (its channel and ts as Slack answered them).
      const updates = await slack.waitFor('chat.update', 2);
      await notificationsDone(t);
      assert.equal(slack.calls.filter((c) => c.api === 'chat.update').length, 2, 'one update per message');
      assert.deepEqual(posts.map((post) => post.body.channel).sort(), ['C0APPROVALS', 'U0DANA']);
      assert.deepEqual(
        updates.map((update) => update.body.channel).sort(),
        ['C0APPROVALS', 'D0DANA'],
        'the DM is updated in the channel Slack opened for it',
      );
      for (const update of updates) {
        assert.equal(update.headers.authorization, `Bearer ${slack.token}`);
        assert.ok(
          slack.messages.has(`${update.body.channel}/${update.body.ts}`),
          'a message that was posted',
        );
        checkOutcomeMessage(update.body, /Approved/);
        assert.match(JSON.stringify(update.body.blocks), /\(via slack\)/);
      }
      for (const message of slack.messages.values()) checkOutcomeMessage(message, /Approved/);
    });

    test('Slack: bad, stale and replayed interactions and strangers change nothing', async (tc) => {
      const peers = await start(tc, backend);
      const { t, slack } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: dana@acme.test, name: Dana Slack, role: approver, slack_user_id: U0DANA, channels: [slack] }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer, slack_user_id: U0VIC, channels: [slack] }`,
          'approvers: [dana@acme.test]',
        ),
      });
      const holdId = await submit(t, key);
      await slack.waitFor('chat.postMessage', 1);
      await notificationsDone(t);
      const before = await snapshot(peers, key, holdId);
      const now = t.clock.now();

      const refused = [
        ['signed with another secret', slackClick(t, { user: 'U0DANA', holdId, secret: 'not-the-secret' })],
        ['signed six minutes ago', slackClick(t, { user: 'U0DANA', holdId, at: now - 6 * 60_000 })],
        ['signed six minutes ahead', slackClick(t, { user: 'U0DANA', holdId, at: now + 6 * 60_000 })],
      ] as const;
      for (const [what, click] of refused) {
        const answer = await click.send();
        assert.equal(answer.status, 401, what);
      }
      const unsigned = await fetch(`${t.url}/slack/interactions`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ payload: JSON.stringify({ type: 'block_actions' }) }).toString(),
      });
      assert.equal(unsigned.status, 401, 'unsigned');
      // Well signed, but nobody who may decide: a Slack user who is not a member, and a viewer.
      for (const user of ['U0STRANGER', 'U0VIC']) {
        assert.equal((await slackClick(t, { user, holdId }).send()).status, 200, user);
      }
      // Well signed, but not a click: any JSON at all is answered without a 5xx.
      for (const payload of [null, 5, 'text', [], { actions: 'x' }, { actions: [null], user: 7 }]) {
        const answer = await slackClick(t, { user: 'U0DANA', holdId, payload }).send();
        assert.ok(answer.status < 500, `${JSON.stringify(payload)}: ${answer.status}`);
      }
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), before, 'nothing changed');

      // A real click from Dana rejects; the exact same request again changes nothing.
      const click = slackClick(t, { user: 'U0DANA', holdId, action: 'reject' });
      assert.equal((await click.send()).status, 200);
      await slack.waitFor('chat.update', 1);
      await notificationsDone(t);
      const decided = await snapshot(peers, key, holdId);
      assert.equal(decided.status, 'rejected');
      assert.equal(decided.decision.channel, 'slack');
      assert.equal(decided.evidence, before.evidence + 1);
      assert.deepEqual(decided.decisions, ['dana@acme.test reject slack']);

      assert.equal((await click.send()).status, 200, 'Slack is answered, and nothing happens');
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), decided, 'a replay changes nothing');
    });

    test('SMS: the text carries the link and reply codes; a signed YES decides with channel sms', async (tc) => {
      const peers = await start(tc, backend);
      const { t, sms } = peers;
      const { workspace, key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: fay@acme.test, name: Fay Phone, role: approver, phone: "+15550101", channels: [sms] }`,
          'approvers: [fay@acme.test]',
        ),
      });
      const holdId = await submit(t, key);

      const [sent] = await sms.waitFor('+15550101');
      await notificationsDone(t);
      assert.equal(sms.calls.length, 1, 'one SMS');
      assert.equal(sent!.status, 201);
      assert.equal(sent!.method, 'POST');
      assert.equal(sent!.path, `/2010-04-01/Accounts/${sms.accountSid}/Messages.json`);
      assert.equal(
        sent!.headers.authorization,
        `Basic ${Buffer.from(`${sms.accountSid}:${sms.authToken}`).toString('base64')}`,
      );
      assert.match(String(sent!.headers['content-type']), /^application\/x-www-form-urlencoded/);
      assert.deepEqual(Object.keys(sent!.form).sort(), ['Body', 'From', 'To']);
      assert.equal(sent!.form.From, sms.from);
      const text = sent!.form.Body!;
      const match = /^Approval needed \(SDK\): (.+) (\S+) Or reply YES (\d{4}) \/ NO (\d{4})\.$/.exec(text);
      assert.ok(match, `the SMS text: ${text}`);
      const [, summary, link, code, sameCode] = match;
      assert.ok(SUMMARY.startsWith(summary!), 'summarizes the arguments');
      assert.match(link!, new RegExp(`^${t.url}${LINK.source}`));
      assert.equal(code, sameCode);
      const page = await openLink(link!);
      assert.equal(page.status, 200);
      assert.match(page.text, /For Fay Phone/);
      assert.equal((await record(t, key, holdId)).status, 'pending');

      const answer = await inboundSms(peers, { from: '+15550101', body: ` yes ${code} ` }).send();
      assert.equal(answer.status, 200);
      assert.match(answer.type, /^text\/xml/);
      assert.equal(answer.text, twiml('Done: approved.'));
      const body = await record(t, key, holdId);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.channel, 'sms');
      assert.deepEqual(await decisionsOf(t, holdId), ['fay@acme.test approve sms']);
      const [entry] = (await evidenceOf(t, workspace, holdId)).filter((e) => e.type === 'hold.approved');
      assert.equal(entry!.data.channel, 'sms');
      assert.equal(entry!.data.member.email, 'fay@acme.test');
      assert.match((await openLink(link!)).text, /<title>Already decided/);
    });

    test('SMS: a bad signature, a replayed MessageSid and a wrong code change nothing', async (tc) => {
      const peers = await start(tc, backend);
      const { t, sms } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: fay@acme.test, name: Fay Phone, role: approver, phone: "+15550101", channels: [sms] }
  - { email: gus@acme.test, name: Gus Phone, role: approver, phone: "+15550102", channels: [sms] }`,
          'approvers: [fay@acme.test, gus@acme.test], approvals_required: 2',
        ),
      });
      const holdId = await submit(t, key);
      const codeOf = async (phone: string) =>
        /YES (\d{4})/.exec((await sms.waitFor(phone))[0]!.form.Body!)![1]!;
      const fay = await codeOf('+15550101');
      const gus = await codeOf('+15550102');
      await notificationsDone(t);
      const wrong = ['1000', '2000', '3000'].find((code) => code !== fay && code !== gus)!;
      const before = await snapshot(peers, key, holdId);

      const yes = { from: '+15550101', body: `YES ${fay}` };
      const forbidden = [
        ['signed with another token', inboundSms(peers, { ...yes, sign: { token: 'not-the-token' } })],
        [
          'signed over another URL',
          inboundSms(peers, { ...yes, sign: { url: `http://localhost:${new URL(t.url).port}/sms/inbound` } }),
        ],
        ['a body changed after signing', inboundSms(peers, { ...yes, tamper: { Body: `NO ${fay}` } })],
        ['a sender changed after signing', inboundSms(peers, { ...yes, tamper: { From: '+15550102' } })],
        ['a field added after signing', inboundSms(peers, { ...yes, tamper: { Extra: '1' } })],
        ['unsigned', inboundSms(peers, { ...yes, sign: null })],
      ] as const;
      for (const [what, inbound] of forbidden) {
        const answer = await inbound.send();
        assert.equal(answer.status, 403, what);
      }
      // Signed, but no open request of the sender has that code: a wrong code, another member's
      // code, the right code from a phone no member has.
      const strangers = [
        ['+15550101', `YES ${wrong}`],
        ['+15559999', `YES ${fay}`],
        ['+15550101', 'sure, go ahead'],
      ];
      // (Fay and Gus drew their codes apart: the same code is allowed for different members.)
      if (gus !== fay) strangers.push(['+15550101', `YES ${gus}`]);
      for (const [from, body] of strangers) {
        const answer = await inboundSms(peers, { from: from!, body: body! }).send();
        assert.equal(answer.status, 200, body);
        assert.equal(answer.text, twiml('Reply YES or NO with the code from the message, e.g. YES 4821.'));
      }
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), before, 'nothing changed');

      // Fay's real reply counts once; the provider delivering it again changes nothing.
      const reply = inboundSms(peers, yes);
      assert.equal((await reply.send()).text, twiml('Recorded. More approvals are needed.'));
      const recorded = await snapshot(peers, key, holdId);
      assert.deepEqual(recorded.approvals, { required: 2, received: 1 });
      assert.equal(recorded.evidence, before.evidence + 1);
      const replay = await reply.send();
      assert.equal(replay.status, 200);
      assert.equal(replay.text, twiml('Already received.'));
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), recorded, 'a replay changes nothing');

      // Gus says no: the hold is rejected through SMS.
      assert.equal(
        (await inboundSms(peers, { from: '+15550102', body: `NO ${gus}` }).send()).text,
        twiml('Done: rejected.'),
      );
      const body = await record(t, key, holdId);
      assert.equal(body.status, 'rejected');
      assert.equal(body.decision.channel, 'sms');
      assert.deepEqual(await decisionsOf(t, holdId), [
        'fay@acme.test approve sms',
        'gus@acme.test reject sms',
      ]);
    });

    test('four-eyes across channels: approved once by the e-mail link and once in Slack', async (tc) => {
      const peers = await start(tc, backend);
      const { t, smtp, slack } = peers;
      const { workspace, key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: hana@acme.test, name: Hana Mail, role: approver, channels: [email] }
  - { email: ivan@acme.test, name: Ivan Slack, role: approver, slack_user_id: U0IVAN, channels: [slack] }`,
          'approvers: [hana@acme.test, ivan@acme.test], approvals_required: 2',
        ),
      });
      const holdId = await submit(t, key);
      const link = linkIn(t, (await smtp.next('hana@acme.test')).links);
      const [post] = await slack.waitFor('chat.postMessage', 1);
      assert.equal(post!.body.channel, 'U0IVAN');
      checkWaitingMessage(post!, holdId, slack.token);

      const first = await openLink(link, 'approve');
      assert.equal(first.status, 200);
      assert.match(first.text, /You approved\. 1 of 2 — waiting for /);
      let body = await record(t, key, holdId);
      assert.equal(body.status, 'pending');
      assert.deepEqual(body.approvals, { required: 2, received: 1 });
      // Ivan's message now says who approved so far, and still has the buttons.
      const [progress] = await slack.waitFor('chat.update', 1);
      assert.match(JSON.stringify(progress!.body.blocks), /approved by Hana Mail \(1 of 2\)/);
      checkWaitingMessage(progress!, holdId, slack.token);

      assert.equal((await slackClick(t, { user: 'U0IVAN', holdId }).send()).status, 200);
      body = await record(t, key, holdId);
      assert.equal(body.status, 'approved');
      assert.deepEqual(body.approvals, { required: 2, received: 2 });
      assert.equal(body.decision.channel, 'slack');

      const trail = (await evidenceOf(t, workspace, holdId)).filter((e) => e.data.member);
      assert.deepEqual(
        trail.map((entry) => [entry.type, entry.data.member.email, entry.data.channel, entry.data.verdict]),
        [
          ['hold.approval_recorded', 'hana@acme.test', 'email', 'approve'],
          ['hold.approved', 'ivan@acme.test', 'slack', 'approve'],
        ],
      );
      await verifiedEvidence(t, key);

      const [, outcome] = await slack.waitFor('chat.update', 2);
      assert.equal(outcome!.body.channel, 'D0IVAN');
      checkOutcomeMessage(outcome!.body, /Approved/);
      assert.match(JSON.stringify(outcome!.body.blocks), /approved by Hana Mail, Ivan Slack \(2 of 2\)/);
      const mail = await smtp.next('hana@acme.test');
      assert.equal(
        mail.subject,
        'Approved: send_invoice(customer="Globex", amount=1200, currency="EUR") on SDK',
      );
      assert.match(partsOf(mail).text, /^Approved \(decided via slack\)\./);
    });

    test('expiry closes every channel: Slack shows it, an outcome mail follows, links and codes are dead', async (tc) => {
      const peers = await start(tc, backend);
      const { t, smtp, slack, sms } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: kim@acme.test, name: Kim Slack, role: approver, slack_user_id: U0KIM, channels: [slack] }
  - { email: lou@acme.test, name: Lou Phone, role: approver, phone: "+15550103", channels: [sms, email] }`,
          'approvers: [kim@acme.test, lou@acme.test], timeout_minutes: 1',
        ),
      });
      const holdId = await submit(t, key);
      const link = linkIn(t, (await smtp.next('lou@acme.test')).links);
      await slack.waitFor('chat.postMessage', 1);
      const code = /YES (\d{4})/.exec((await sms.waitFor('+15550103'))[0]!.form.Body!)![1]!;

      // Every send recorded first: a jump past the 60 s claim of a job would make one still being
      // recorded look abandoned, and send it again.
      await notificationsDone(t);
      await t.clock.advance(61_000);
      await until('the hold to expire', async () =>
        (await record(t, key, holdId)).status === 'expired' ? true : undefined,
      );
      const [update] = await slack.waitFor('chat.update', 1);
      checkOutcomeMessage(update!.body, /Expired/);
      const mail = await smtp.next('lou@acme.test');
      assert.equal(
        mail.subject,
        'Expired: send_invoice(customer="Globex", amount=1200, currency="EUR") on SDK',
      );
      assert.match(partsOf(mail).text, /^Expired: no decision before the deadline\./);
      await notificationsDone(t);
      const before = await snapshot(peers, key, holdId);

      const page = await openLink(link);
      assert.match(page.text, /This request expired without a decision\./);
      assert.ok(!hasForm(page.text));
      assert.equal((await openLink(link, 'approve')).status, 409);
      const reply = await inboundSms(peers, { from: '+15550103', body: `YES ${code}` }).send();
      assert.equal(reply.status, 200);
      assert.doesNotMatch(reply.text, /Done|Recorded/);
      assert.equal((await slackClick(t, { user: 'U0KIM', holdId }).send()).status, 200);
      await notificationsDone(t);
      assert.deepEqual(await snapshot(peers, key, holdId), before, 'nothing decides an expired hold');
      assert.deepEqual(await decisionsOf(t, holdId), []);
    });

    test('SMS without replies: the text carries only the link, and /sms/inbound is not there', async (tc) => {
      const peers = await start(tc, backend, { SMS_REPLIES: 'false' });
      const { t, sms } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: fay@acme.test, name: Fay Phone, role: approver, phone: "+15550101", channels: [sms] }`,
          'approvers: [fay@acme.test]',
        ),
      });
      const holdId = await submit(t, key);
      const [sent] = await sms.waitFor('+15550101');
      assert.match(sent!.form.Body!, new RegExp(`^Approval needed \\(SDK\\): .+ ${t.url}${LINK.source}`));
      assert.doesNotMatch(sent!.form.Body!, /YES|NO \d/);
      const answer = await inboundSms(peers, { from: '+15550101', body: 'YES 1234' }).send();
      assert.equal(answer.status, 404);
      assert.equal((await record(t, key, holdId)).status, 'pending');
    });

    test('no decision on a summary: a memo of spaces gets a Review link instead of buttons and reply codes', async (tc) => {
      const peers = await start(tc, backend, { SLACK_CHANNEL: 'C0APPROVALS' });
      const { t, smtp, slack, sms } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: fay@acme.test, name: Fay All, role: approver, phone: "+15550101", slack_user_id: U0FAY, channels: [email, sms, slack] }`,
          'approvers: [fay@acme.test]',
        ),
      });
      // The attack of issue 19: the memo pushes the amount and the payee out of a 200-character summary.
      const args = { memo: ' '.repeat(600), amount: 950000, payee: 'Mallory Ltd' };
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'send_invoice', arguments: args }),
      });
      assert.equal(answer.status, 201, answer.text);
      const holdId = answer.body.id as string;
      const full = `send_invoice(memo=${JSON.stringify(args.memo)}, amount=950000, payee="Mallory Ltd")`;

      // Slack: no Approve or Reject, in the direct message or the channel post; a Review link instead.
      const posts = await slack.waitFor('chat.postMessage', 2);
      const byTarget: Record<string, any> = Object.fromEntries(
        posts.map((post) => [post.body.channel, post.body]),
      );
      for (const [target, message] of Object.entries(byTarget)) {
        const buttons = blocksOf(message, 'actions').flatMap((block: any) => block.elements);
        assert.deepEqual(
          buttons.map((button: any) => button.action_id),
          ['review'],
          `${target}: only a Review button`,
        );
        assert.equal(buttons[0].text.text, 'Review');
        const text = JSON.stringify(message.blocks);
        assert.match(text, /amount=950000/, `${target} shows the amount`);
        assert.match(text, /\+1 more field|payee/, `${target} says what it left out`);
        assert.match(text, /review it in full/i);
      }
      const dmReview = blocksOf(byTarget.U0FAY, 'actions')[0].elements[0].url;
      assert.match(dmReview, new RegExp(`^${t.url}${LINK.source}`), 'Fay reviews on her decision page');
      assert.match((await openLink(dmReview)).text, /Mallory Ltd/);
      assert.equal(
        blocksOf(byTarget.C0APPROVALS, 'actions')[0].elements[0].url,
        `${t.url}/app/holds/${holdId}`,
        'the channel post reviews in the app',
      );
      // A signed click for it (an old message, a forged payload) decides nothing.
      assert.equal((await slackClick(t, { user: 'U0FAY', holdId }).send()).status, 200);
      assert.equal((await record(t, key, holdId)).status, 'pending');

      // SMS: the link to review it, no reply code issued, and a planted one is not accepted.
      const [sent] = await sms.waitFor('+15550101');
      const body = sent!.form.Body!;
      assert.doesNotMatch(body, /YES|NO \d/, body);
      assert.match(body, /amount=950000/, body);
      assert.match(body, /\+1 more field/, body);
      assert.match(body, new RegExp(`Review it in full: ${t.url}${LINK.source}`), body);
      const codes = await t.service.ctx.db.all<{ code: string | null }>(
        "SELECT reply_code AS code FROM notifications WHERE hold_id = $1 AND channel = 'sms'",
        [holdId],
      );
      assert.deepEqual(
        codes.map((row) => row.code),
        [null],
        'no reply code issued',
      );
      await t.service.ctx.db.run(
        "UPDATE notifications SET reply_code = '4321' WHERE hold_id = $1 AND channel = 'sms'",
        [holdId],
      );
      const reply = await inboundSms(peers, { from: '+15550101', body: 'YES 4321' }).send();
      assert.equal(reply.text, twiml('This action does not fit in a text: open the link to review it.'));
      assert.equal((await record(t, key, holdId)).status, 'pending');
      assert.deepEqual(await decisionsOf(t, holdId), []);

      // E-mail: every argument in full, in the text and in the HTML.
      const mail = await smtp.next('fay@acme.test');
      const { text, html } = partsOf(mail);
      assert.ok(text.includes(full), `the whole action in the text: ${text}`);
      assert.ok(html.includes(full.replaceAll('"', '&quot;')), 'the whole action in the HTML');
    });

    test('retries: a Slack API answering 500 gets the message once it is back; nothing is lost', async (tc) => {
      const peers = await start(tc, backend);
      const { t, slack } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: dana@acme.test, name: Dana Slack, role: approver, slack_user_id: U0DANA, channels: [slack] }`,
          'approvers: [dana@acme.test]',
        ),
      });
      slack.fail(500);
      const holdId = await submit(t, key);
      await until('three failed attempts', async () => (slack.calls.length >= 3 ? true : undefined));
      const [job] = (await jobsOf(t, holdId)).filter((j) => j.channel === 'slack');
      assert.equal(job!.state, 'pending', 'still to be sent');
      assert.ok(job!.attempts >= 2, `attempts counted: ${job!.attempts}`);
      assert.match(job!.error ?? '', /HTTP 500/);

      slack.recover();
      const [post] = await slack.waitFor('chat.postMessage', 1);
      checkWaitingMessage(post!, holdId, slack.token);
      await notificationsDone(t);
      assert.equal(slack.calls.filter((c) => c.ok).length, 1, 'posted exactly once');
      const [sent] = (await jobsOf(t, holdId)).filter((j) => j.channel === 'slack');
      assert.equal(sent!.state, 'sent');
      assert.equal(sent!.error, null);

      // The update after the decision waits out an outage the same way.
      slack.fail(503);
      const failedBefore = slack.calls.length;
      assert.equal((await slackClick(t, { user: 'U0DANA', holdId }).send()).status, 200);
      await until('two failed updates', async () =>
        slack.calls.length >= failedBefore + 2 ? true : undefined,
      );
      slack.recover();
      const [update] = await slack.waitFor('chat.update', 1);
      checkOutcomeMessage(update!.body, /Approved/);
      await notificationsDone(t);
      assert.equal(slack.calls.filter((c) => c.ok).length, 2);
      assert.deepEqual(
        (await jobsOf(t, holdId)).map((j) => [j.channel, j.kind, j.state]),
        [
          ['slack', 'request', 'sent'],
          ['slack', 'refresh', 'sent'],
        ],
      );
    });

    test('retries: an SMS provider answering 503 gets the text once it is back, on schedule; sent once', async (tc) => {
      // The real schedule (5 s, then 10 s, ...), on a clock the test moves: nothing waits for it.
      const peers = await start(tc, backend, { NOTIFY_RETRY_SCALE: '1' });
      const { t, sms } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: fay@acme.test, name: Fay Phone, role: approver, phone: "+15550101", channels: [sms] }`,
          'approvers: [fay@acme.test]',
        ),
      });
      const smsJob = async () =>
        (await t.service.ctx.db.one<{ state: string; attempts: number; next: number; error: string | null }>(
          `SELECT state, attempts, next_attempt_at AS "next", last_error AS error FROM notifications
           WHERE hold_id = $1 AND channel = 'sms'`,
          [holdId],
        ))!;
      sms.fail(503);
      const holdId = await submit(t, key);
      await t.settled(); // the first attempt is made and recorded
      let job = await smsJob();
      assert.deepEqual([job.state, job.attempts, sms.calls.length], ['pending', 1, 1], 'still to be sent');
      assert.match(job.error ?? '', /503/);
      const wait = Number(job.next) - t.clock.now();
      assert.ok(wait > 4000 && wait <= 5000, `the first retry 5 s later: ${wait} ms`);

      await t.clock.advanceTo(Number(job.next) - 1000);
      assert.equal(sms.calls.length, 1, 'no retry a second before it is due');
      await t.clock.advanceTo(Number(job.next));
      job = await smsJob();
      assert.deepEqual([job.state, job.attempts, sms.calls.length], ['pending', 2, 2], 'retried when due');
      const next = Number(job.next) - t.clock.now();
      assert.ok(next > 9000 && next <= 10_000, `the second retry 10 s later: ${next} ms`);

      sms.recover();
      await t.clock.advanceTo(Number(job.next));
      const [sent] = await sms.waitFor('+15550101');
      assert.match(sent!.form.Body!, /^Approval needed/);
      await notificationsDone(t);
      assert.equal(sms.calls.filter((c) => c.status === 201).length, 1, 'sent exactly once');
      assert.equal(sms.calls.length, 3);
      assert.equal((await smsJob()).state, 'sent');
    });

    test('retries: with the SMTP server unreachable, the mail arrives once it is back; nothing is lost', async (tc) => {
      const peers = await start(tc, backend);
      const { t, smtp, mailLink } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }`,
          'approvers: [ada@acme.test]',
        ),
      });
      await mailLink.cut();
      const holdId = await submit(t, key);
      const failed = await until('two failed attempts', async () => {
        const [job] = await jobsOf(t, holdId);
        return job && job.attempts >= 2 ? job : undefined;
      });
      assert.equal(failed.state, 'pending');
      assert.ok(failed.error, 'the failure is recorded');
      assert.equal(smtp.messages.length, 0);

      await mailLink.restore();
      const mail = await smtp.next('ada@acme.test');
      assert.equal(mail.subject, 'Approve send_invoice 1,200 EUR — Invoices');
      const link = linkIn(t, mail.links);
      await notificationsDone(t);
      assert.equal(smtp.messages.length, 1, 'delivered exactly once');
      const [job] = await jobsOf(t, holdId);
      assert.equal(job!.state, 'sent');

      // And the link in it works.
      assert.equal((await openLink(link, 'approve')).status, 200);
      assert.equal((await record(t, key, holdId)).decision.channel, 'email');
    });

    test('Slack: every message ends up showing the outcome even when a slow update overlaps the decision', async (tc) => {
      const peers = await start(tc, backend, { SLACK_CHANNEL: 'C0APPROVALS' });
      const { t, smtp, slack } = peers;
      const { key } = await t.workspace({
        config: workspaceConfig(
          `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: hana@acme.test, name: Hana Mail, role: approver, channels: [email] }
  - { email: ivan@acme.test, name: Ivan Slack, role: approver, slack_user_id: U0IVAN, channels: [slack] }`,
          'approvers: [hana@acme.test, ivan@acme.test], approvals_required: 2',
        ),
      });
      const holdId = await submit(t, key);
      const link = linkIn(t, (await smtp.next('hana@acme.test')).links);
      await slack.waitFor('chat.postMessage', 2);

      // Slack takes a while to answer the first update (of two: the DM and the channel post).
      slack.slowDown('chat.update', 1500);
      assert.equal((await openLink(link, 'approve')).status, 200);
      await slack.waitFor('chat.update', 1);
      assert.equal((await slackClick(t, { user: 'U0IVAN', holdId }).send()).status, 200);
      assert.equal((await record(t, key, holdId)).status, 'approved');

      await until(
        'every notification of the hold to be done',
        async () => ((await jobsOf(t, holdId)).every((job) => job.state !== 'pending') ? true : undefined),
        10_000,
      );
      await notificationsDone(t);
      assert.equal(slack.messages.size, 2);
      for (const [id, message] of slack.messages) {
        assert.equal(blocksOf(message, 'actions').length, 0, `${id} still offers buttons: ${message.text}`);
        assert.match(message.text, /^Approved/, id);
      }
    });

    test('SMS: a reply code names exactly one open request of a phone, across workspaces', async (tc) => {
      const peers = await start(tc, backend);
      const { t, sms } = peers;
      const PHONE = '+15550177';
      const config = workspaceConfig(
        `  - { email: ada@acme.test, name: Ada Admin, role: admin, channels: [email] }
  - { email: pat@acme.test, name: Pat Phone, role: approver, phone: "${PHONE}", channels: [sms] }`,
        'approvers: [pat@acme.test]',
      );
      const first = await t.workspace({ config });
      const second = await t.workspace({ config });

      // Four-digit codes: the same code for two open requests turns up after ~80 holds in each.
      const holdOfCode = new Map<string, string>();
      let shared: { code: string; holds: string[] } | undefined;
      for (let round = 0; round < 30 && !shared; round++) {
        // A fresh API rate window, once the last round's texts are recorded as sent (a jump past the
        // 60 s claim of a job still being recorded would send it again, with a new link).
        await notificationsDone(t);
        await t.clock.advance(61_000);
        for (let i = 0; i < 12; i++) {
          await submit(t, first.key);
          await submit(t, second.key);
        }
        const sent = await sms.waitFor(PHONE, (round + 1) * 24, 20_000);
        holdOfCode.clear();
        for (const message of sent) {
          const code = /YES (\d{4})/.exec(message.form.Body!)![1]!;
          const hold = /\/d\/(\S+)/.exec(message.form.Body!)![1]!;
          if (holdOfCode.has(code)) shared = { code, holds: [holdOfCode.get(code)!, hold] };
          holdOfCode.set(code, hold);
        }
      }
      assert.equal(
        shared,
        undefined,
        `two open requests to ${PHONE} carry the code ${shared?.code}: a reply cannot tell them apart`,
      );
    });
  });
}
