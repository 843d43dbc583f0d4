/**
 * Reaching the right person in time, on both backends with a clock the tests move: reminders at their
 * times and only to those who have not decided, a two-step escalation, a delegation that starts and
 * ends (the delegate decides for the member, each person counted once, never on their own agent's
 * request), quiet hours in the member's time zone, and the webhook events of each.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, type TestContext, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { ServiceError } from '../src/services/errors.ts';
import { followUpLog } from '../src/services/follow-up-log.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { verifiedEvidence } from './support/app-client.ts';
import { type Backend, backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startSmsStub } from './support/provider-stub.ts';
import { isCheckpointEvent, startReceiver } from './support/receiver.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';
import { until } from './support/wait.ts';

const MIN = 60_000;
/** A Wednesday, 10:00 UTC. */
const T0 = Date.parse('2026-11-25T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

async function start(tc: TestContext, backend: Backend, at = T0, env: Record<string, string> = {}) {
  const smtp = await startSmtp();
  const t = await startTestService(backend, {
    clock: new TestClock({ at }),
    env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, NOTIFY_RETRY_SCALE: '0.001', ...env },
  });
  tc.after(async () => {
    await t.close();
    await smtp.close();
  });
  return { t, smtp };
}

async function submit(t: TestService, key: string, tool: string, agent = 'billing-bot') {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: tool, arguments: { amount: 1200 }, agent_identity: { id: agent } }),
  });
  assert.equal(answer.status, 201, answer.text);
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

/** The hold's notification jobs as `kind email state` lines, in the order they were written. */
const jobsOf = async (t: TestService, holdId: string) =>
  (
    await t.service.ctx.db.all<{ kind: string; email: string; state: string; due: number; channel: string }>(
      `SELECT n.kind, m.email, n.state, n.next_attempt_at AS due, n.channel FROM notifications n
       JOIN members m ON m.id = n.member_id WHERE n.hold_id = $1 ORDER BY n.created_at, m.email`,
      [holdId],
    )
  ).map((job) => `${job.kind} ${job.email}`);

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

/** The requests and reminders sent to `address` (not the outcome mails). */
const mailsTo = (smtp: TestSmtp, address: string) =>
  smtp.messages.filter(
    (mail) => mail.to.includes(address) && !/^(Approved|Rejected|Expired):/.test(mail.subject),
  );

for (const backend of backends) {
  describe(`follow-ups on ${backend.name}`, { skip: backend.skip }, () => {
    test('the workspace file: follow-ups, delegations and quiet hours are checked, and export round-trips them', async (tc) => {
      const { t } = await start(tc, backend);
      const file = `
members:
  - { email: admin@acme.test, name: Admin, role: admin, time_zone: Europe/Berlin, quiet_hours: { from: '20:00', to: '08:00', weekends: true } }
  - email: ann@acme.test
    name: Ann
    role: approver
    teams_user_id: 6B1F6C8E-33A5-4C3E-9D65-0D0F9C3C1A11
    channels: [email, teams]
    agents: [ann-bot]
    delegate: { to: admin@acme.test, from: '2026-12-01T09:00:00.000Z', until: '2026-12-08T09:00:00.000Z' }
  - { email: val@acme.test, name: Val, role: viewer }
groups: { oncall: [admin@acme.test] }
remind: [1h]
rules:
  - { name: Deploys, tool: deploy, effect: approval, approvers: [ann@acme.test], timeout_minutes: 120, remind: { before: [30m], every: 1h }, escalate: [{ after: 15m, to: [group:oncall] }] }
`;
      const { workspace } = await t.workspace({ config: file });
      const exported = await exportConfig(t.service.ctx, workspace);
      assert.deepEqual(exported.members![1], {
        email: 'ann@acme.test',
        name: 'Ann',
        role: 'approver',
        teams_user_id: '6b1f6c8e-33a5-4c3e-9d65-0d0f9c3c1a11',
        channels: ['email', 'teams'],
        agents: ['ann-bot'],
        delegate: {
          to: 'admin@acme.test',
          from: '2026-12-01T09:00:00.000Z',
          until: '2026-12-08T09:00:00.000Z',
        },
      });
      assert.deepEqual(exported.remind, { before: ['1h'] });
      assert.deepEqual(exported.rules![0]!.escalate, [{ after: '15m', to: ['group:oncall'] }]);
      const again = await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(exported)));
      assert.deepEqual(again.items_changed, []);

      const refused: [string, RegExp][] = [
        [
          'rules: [{ name: d, tool: x, effect: deny, remind: [5m] }]',
          /rules\.0\.remind: only an approval rule has remind/,
        ],
        [
          'rules: [{ name: a, tool: x, effect: approval, remind: [5s] }]',
          /rules\.0\.remind.*must be a duration like 30m/,
        ],
        [
          'rules: [{ name: a, tool: x, effect: approval, timeout_minutes: 30, remind: [30m] }]',
          /remind\.before\.0: must be shorter than timeout_minutes/,
        ],
        [
          'rules: [{ name: a, tool: x, effect: approval, escalate: [{ after: 1h, to: [role:admin] }, { after: 30m, to: [role:admin] }] }]',
          /escalate\.1\.after: must be later than the step before/,
        ],
        ['rules: [{ name: a, tool: x, effect: approval, escalate: { after: 1h, to: [] } }]', /escalate/],
        [
          'members: [{ email: a@acme.test, name: A, role: admin, time_zone: Mars/Olympus }]',
          /time_zone: must be an IANA time zone/,
        ],
        [
          "members: [{ email: a@acme.test, name: A, role: admin, quiet_hours: { from: '08:00', to: '08:00' } }]",
          /quiet_hours: must end at another time/,
        ],
        [
          'members: [{ email: a@acme.test, name: A, role: admin, teams_user_id: U01 }]',
          /teams_user_id: must be a Microsoft Entra object id/,
        ],
        [
          "members: [{ email: a@acme.test, name: A, role: admin, delegate: { to: b@acme.test, from: '2026-12-02T00:00:00Z', until: '2026-12-01T00:00:00Z' } }]",
          /delegate: must end after it starts/,
        ],
      ];
      for (const [yaml, message] of refused) assert.throws(() => parseConfig(yaml), message, yaml);
      const crossRefused: [string, RegExp][] = [
        [
          'rules: [{ name: a, tool: x, effect: approval, escalate: { after: 1h, to: [group:nobody] } }]',
          /rules\.0\.escalate\.0\.to\.0: names no group/,
        ],
        [
          "members:\n  - { email: admin@acme.test, name: Admin, role: admin, delegate: { to: admin@acme.test, from: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z' } }",
          /members\.0\.delegate\.to: must be another member/,
        ],
        [
          "members:\n  - { email: admin@acme.test, name: Admin, role: admin, delegate: { to: val@acme.test, from: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z' } }\n  - { email: val@acme.test, name: Val, role: viewer }",
          /members\.0\.delegate\.to: is a viewer/,
        ],
        [
          "members:\n  - { email: admin@acme.test, name: Admin, role: admin, delegate: { to: zed@acme.test, from: '2026-12-01T00:00:00Z', until: '2026-12-02T00:00:00Z' } }",
          /members\.0\.delegate\.to: is not a member/,
        ],
      ];
      const before = await exportConfig(t.service.ctx, workspace);
      for (const [yaml, message] of crossRefused) {
        const error = await applyConfig(t.service.ctx, workspace, parseConfig(yaml)).catch((e: unknown) => e);
        assert.ok(error instanceof ServiceError, yaml);
        assert.match(error.message, message);
      }
      assert.deepEqual(await exportConfig(t.service.ctx, workspace), before);
    });

    test('reminders come at their times, to the approvers who have not decided, saying what is left', async (tc) => {
      const { t, smtp } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: cat@acme.test, name: Cat, role: approver }
groups: { finance: [ann@acme.test, bob@acme.test, cat@acme.test] }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [group:finance], approvals_required: 2, timeout_minutes: 60, remind: [30m, 5m] }
`,
      });
      const id = await submit(t, key, 'pay');
      assert.deepEqual(await jobsOf(t, id), [
        'request ann@acme.test',
        'request bob@acme.test',
        'request cat@acme.test',
      ]);
      await t.clock.advance(10 * MIN);
      assert.equal((await decideAs(t, workspace.id, id, 'approve', 'ann@acme.test')).outcome, 'recorded');

      // A minute before the first reminder: none.
      await t.clock.advance(19 * MIN);
      assert.equal((await jobsOf(t, id)).filter((job) => job.startsWith('reminder')).length, 0);
      await t.clock.advance(1 * MIN);
      assert.deepEqual(
        (await jobsOf(t, id)).filter((job) => job.startsWith('reminder')),
        ['reminder bob@acme.test', 'reminder cat@acme.test'],
      );
      const reminder = await until('the reminder to reach Bob', async () =>
        mailsTo(smtp, 'bob@acme.test').find((mail) => mail.subject.includes('; reminder,')),
      );
      assert.equal(
        reminder.subject,
        'Approve pay 1,200 — Payments; reminder, 30 min left; 1 of 2 approvals in',
      );
      assert.match(reminder.body, /Reminder: 30 min left to decide · approved so far by Ann\./);
      assert.ok(!mailsTo(smtp, 'ann@acme.test').some((mail) => mail.subject.includes('; reminder,')));

      // The second, five minutes before the deadline; then the hold is decided and nothing more comes.
      await t.clock.advance(25 * MIN);
      assert.equal((await jobsOf(t, id)).filter((job) => job.startsWith('reminder')).length, 4);
      assert.equal((await decideAs(t, workspace.id, id, 'approve', 'bob@acme.test')).outcome, 'recorded');
      await t.clock.advance(4 * MIN);
      assert.equal((await jobsOf(t, id)).filter((job) => job.startsWith('reminder')).length, 4);

      const reminded = (await evidenceOf(t, workspace, id)).filter((entry) => entry.type === 'hold.reminded');
      assert.deepEqual(
        reminded.map((entry) => [entry.data.reminded, entry.data.approved_by, entry.data.seconds_left]),
        [
          [['bob@acme.test', 'cat@acme.test'], ['ann@acme.test'], 1800],
          [['bob@acme.test', 'cat@acme.test'], ['ann@acme.test'], 300],
        ],
      );
      await verifiedEvidence(t, key);
    });

    test('the workspace default reminds holds no rule sets reminders for; every: from submission', async (tc) => {
      const { t } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members: [{ email: admin@acme.test, name: Admin, role: admin }]
remind: { every: 1h }
tools: [{ connection: SDK, tool: wire, classification: approval }]
`,
      });
      const id = await submit(t, key, 'wire'); // classified approval: 240 minutes, the admins
      for (const hour of [1, 2, 3]) {
        await t.clock.advance(60 * MIN);
        assert.equal((await jobsOf(t, id)).filter((job) => job.startsWith('reminder')).length, hour);
      }
      // The fourth hour is the deadline itself: the hold expires, no reminder.
      await t.clock.advance(60 * MIN);
      assert.equal((await jobsOf(t, id)).filter((job) => job.startsWith('reminder')).length, 3);
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status, 'expired');
      const submitted = (await evidenceOf(t, workspace, id)).find((entry) => entry.type === 'hold.submitted');
      assert.deepEqual(submitted?.data.remind, { every: '1h' });
    });

    test('a two-step escalation adds approvers, asks them, and is recorded', async (tc) => {
      const { t, smtp } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
  - { email: olga@acme.test, name: Olga, role: approver }
  - { email: oscar@acme.test, name: Oscar, role: approver }
groups: { oncall: [olga@acme.test, oscar@acme.test] }
tools: [{ connection: SDK, tool: deploy, classification: approval }]
rules:
  - name: Deploys
    tool: deploy
    effect: approval
    approvers: [ann@acme.test]
    timeout_minutes: 120
    escalate: [{ after: 15m, to: [group:oncall] }, { after: 45m, to: [role:admin] }]
`,
      });
      const id = await submit(t, key, 'deploy');
      assert.deepEqual(await jobsOf(t, id), ['request ann@acme.test']);
      await t.clock.advance(14 * MIN);
      assert.equal(
        (await decideAs(t, workspace.id, id, 'approve', 'oscar@acme.test')).outcome,
        'not_an_approver',
      );

      await t.clock.advance(1 * MIN);
      assert.deepEqual(await jobsOf(t, id), [
        'request ann@acme.test',
        'request olga@acme.test',
        'request oscar@acme.test',
      ]);
      await until('the request to reach Olga', async () => mailsTo(smtp, 'olga@acme.test')[0]);
      await t.clock.advance(30 * MIN);
      assert.deepEqual((await jobsOf(t, id)).at(-1), 'request admin@acme.test');

      const escalations = (await evidenceOf(t, workspace, id)).filter(
        (entry) => entry.type === 'hold.escalated',
      );
      assert.deepEqual(
        escalations.map(({ data }) => [
          data.step,
          data.after_minutes,
          data.added,
          data.approvers,
          data.notified,
        ]),
        [
          [1, 15, ['group:oncall'], ['ann@acme.test', 'group:oncall'], ['olga@acme.test', 'oscar@acme.test']],
          [2, 45, ['role:admin'], ['ann@acme.test', 'group:oncall', 'role:admin'], ['admin@acme.test']],
        ],
      );
      // Added approvers decide; four-eyes counts stay distinct members.
      assert.equal((await decideAs(t, workspace.id, id, 'approve', 'oscar@acme.test')).outcome, 'recorded');
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status, 'approved');
      const events = await t.service.ctx.db.all<{ kind: string; at: number }>(
        'SELECT kind, at FROM follow_up_events WHERE hold_id = $1 ORDER BY at',
        [id],
      );
      assert.deepEqual(
        events.map((event) => ({ ...event })),
        [
          { kind: 'escalation', at: T0 + 15 * MIN },
          { kind: 'escalation', at: T0 + 45 * MIN },
        ],
      );
      await verifiedEvidence(t, key);
    });

    test('a delegation starts and ends; the delegate decides for the member, each person counted once', async (tc) => {
      const { t } = await start(tc, backend);
      const { workspace, key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - email: ann@acme.test
    name: Ann
    role: approver
    agents: [ann-bot]
    delegate: { to: dan@acme.test, from: '${iso(T0 + 60 * MIN)}', until: '${iso(T0 + 180 * MIN)}' }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: dan@acme.test, name: Dan, role: approver, agents: [dan-bot] }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2, timeout_minutes: 600 }
`,
      });
      const before = await submit(t, key, 'pay');
      assert.deepEqual(await jobsOf(t, before), ['request ann@acme.test', 'request bob@acme.test']);
      assert.equal(
        (await decideAs(t, workspace.id, before, 'approve', 'dan@acme.test')).outcome,
        'not_an_approver',
      );

      // The delegation starts: Dan decides in Ann's place.
      await t.clock.advance(60 * MIN);
      const during = await submit(t, key, 'pay', 'other-bot');
      assert.deepEqual(await jobsOf(t, during), ['request bob@acme.test', 'request dan@acme.test']);
      assert.equal((await decideAs(t, workspace.id, before, 'approve', 'dan@acme.test')).outcome, 'recorded');
      assert.equal(
        (await decideAs(t, workspace.id, before, 'approve', 'dan@acme.test')).outcome,
        'already_decided',
      );
      assert.equal(
        (await decideAs(t, workspace.id, before, 'approve', 'ann@acme.test')).outcome,
        'already_decided',
      );
      const still = await call(t.url, 'GET', `/api/v1/holds/${before}`, { key });
      assert.deepEqual([still.body.status, still.body.approvals], ['pending', { required: 2, received: 1 }]);
      assert.equal((await decideAs(t, workspace.id, before, 'approve', 'bob@acme.test')).outcome, 'recorded');
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${before}`, { key })).body.status, 'approved');
      const decision = (await evidenceOf(t, workspace, before)).find(
        (entry) => entry.type === 'hold.approval_recorded',
      );
      assert.deepEqual(
        [decision?.data.member.email, decision?.data.on_behalf_of.email],
        ['dan@acme.test', 'ann@acme.test'],
      );

      // Nobody decides a hold their own agent asked for: not Dan for himself, not Dan in Ann's place.
      const dansOwn = await submit(t, key, 'pay', 'dan-bot');
      // Dan may not decide his own agent's hold: Ann is asked after all, though away.
      assert.deepEqual(await jobsOf(t, dansOwn), ['request ann@acme.test', 'request bob@acme.test']);
      assert.equal(
        (await decideAs(t, workspace.id, dansOwn, 'approve', 'dan@acme.test')).outcome,
        'own_request',
      );
      const annsOwn = await submit(t, key, 'pay', 'ann-bot');
      assert.equal(
        (await decideAs(t, workspace.id, annsOwn, 'approve', 'dan@acme.test')).outcome,
        'own_request',
      );
      assert.equal(
        (await decideAs(t, workspace.id, annsOwn, 'approve', 'ann@acme.test')).outcome,
        'own_request',
      );
      assert.deepEqual(await jobsOf(t, annsOwn), ['request bob@acme.test']);

      // It ends: Dan no longer decides for Ann, and Ann is asked again.
      await t.clock.advance(120 * MIN);
      assert.equal(
        (await decideAs(t, workspace.id, during, 'approve', 'dan@acme.test')).outcome,
        'not_an_approver',
      );
      const after = await submit(t, key, 'pay', 'other-bot');
      assert.deepEqual(await jobsOf(t, after), ['request ann@acme.test', 'request bob@acme.test']);
      await verifiedEvidence(t, key);
    });

    test('holds already waiting when a delegation starts are handed to the delegate then, once', async (tc) => {
      const { t, smtp } = await start(tc, backend);
      const file = (delegate: string) => `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, delegate: ${delegate} }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: dan@acme.test, name: Dan, role: approver, agents: [dan-bot] }
  - { email: eve@acme.test, name: Eve, role: approver }
tools:
  - { connection: SDK, tool: pay, classification: approval }
  - { connection: SDK, tool: refund, classification: approval }
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2, timeout_minutes: 600 }
  - { name: Refunds, tool: refund, effect: approval, approvers: [ann@acme.test, dan@acme.test], approvals_required: 2, timeout_minutes: 600 }
`;
      const toDan = `{ to: dan@acme.test, from: '${iso(T0 + 60 * MIN)}', until: '${iso(T0 + 180 * MIN)}' }`;
      const { workspace, key } = await t.workspace({ config: file(toDan) });
      const waiting = await submit(t, key, 'pay', 'other-bot');
      const dansOwn = await submit(t, key, 'pay', 'dan-bot');
      const dansToo = await submit(t, key, 'refund', 'other-bot');
      const annDecided = await submit(t, key, 'pay', 'other-bot');
      assert.equal(
        (await decideAs(t, workspace.id, annDecided, 'approve', 'ann@acme.test')).outcome,
        'recorded',
      );
      const asked = ['request ann@acme.test', 'request bob@acme.test'];

      // A minute before it starts, nothing; when it starts, Dan is asked for the hold he may now decide for Ann.
      await t.clock.advance(59 * MIN);
      assert.deepEqual(await jobsOf(t, waiting), asked);
      await t.clock.advance(1 * MIN);
      assert.deepEqual(await jobsOf(t, waiting), [...asked, 'request dan@acme.test']);
      // Not for his own agent's hold, one he was asked for in his own right, or one Ann decided.
      assert.deepEqual(await jobsOf(t, dansOwn), asked);
      assert.deepEqual(await jobsOf(t, dansToo), ['request ann@acme.test', 'request dan@acme.test']);
      assert.deepEqual(await jobsOf(t, annDecided), asked);
      const log = await followUpLog(t.service.ctx, { id: waiting, workspaceId: workspace.id });
      assert.deepEqual(
        log.map(
          (entry) => entry.kind === 'handover' && [entry.at, entry.member, entry.delegate, entry.until],
        ),
        [[T0 + 60 * MIN, 'Ann', 'Dan', T0 + 180 * MIN]],
      );
      assert.deepEqual(await followUpLog(t.service.ctx, { id: dansOwn, workspaceId: workspace.id }), []);
      // The request says whom Dan decides for, and until when.
      const handedMail = await until('the request to reach Dan', () =>
        mailsTo(smtp, 'dan@acme.test').find((mail) => mail.subject.startsWith('Approve pay 1,200 — ')),
      );
      assert.match(
        handedMail.body,
        /^You decide this for Ann, who is away until 2026-11-25 13:00 UTC\.\r?\n\r?\nother-bot wants/,
      );
      const handedOver = (await evidenceOf(t, workspace, waiting)).filter(
        (entry) => entry.type === 'hold.handed_over',
      );
      assert.deepEqual(
        handedOver.map((entry) => entry.data),
        [{ hold: waiting, member: 'ann@acme.test', delegate: 'dan@acme.test', until: iso(T0 + 180 * MIN) }],
      );

      // Once: not again later, nor when the file is applied again or the delegation only runs longer.
      await t.clock.advance(10 * MIN);
      await applyConfig(t.service.ctx, workspace, parseConfig(file(toDan)));
      await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(file(toDan.replace(iso(T0 + 180 * MIN), iso(T0 + 240 * MIN)))),
      );
      await t.clock.advance(1 * MIN);
      assert.deepEqual(await jobsOf(t, waiting), [...asked, 'request dan@acme.test']);

      // Another delegate, from now: Eve is handed the holds Ann may still decide.
      await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(
          file(`{ to: eve@acme.test, from: '${iso(t.clock.now())}', until: '${iso(T0 + 240 * MIN)}' }`),
        ),
      );
      await t.clock.advance(1 * MIN);
      assert.deepEqual(await jobsOf(t, waiting), [
        ...asked,
        'request dan@acme.test',
        'request eve@acme.test',
      ]);
      assert.deepEqual(await jobsOf(t, dansOwn), [...asked, 'request eve@acme.test']);
      assert.equal(
        (await decideAs(t, workspace.id, waiting, 'approve', 'eve@acme.test')).outcome,
        'recorded',
      );
      await verifiedEvidence(t, key);
    });

    test('a handover waits while the delegate is away too, comes again when an ended delegation runs again, and hands over many holds, each once', async (tc) => {
      const { t } = await start(tc, backend);
      const file = (annUntil: number, annTo = 'dan@acme.test', annFrom = T0 + 60 * MIN) => `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, delegate: { to: ${annTo}, from: '${iso(annFrom)}', until: '${iso(annUntil)}' } }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: dan@acme.test, name: Dan, role: approver, delegate: { to: eve@acme.test, from: '${iso(T0 + 30 * MIN)}', until: '${iso(T0 + 90 * MIN)}' } }
  - { email: eve@acme.test, name: Eve, role: approver }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2, timeout_minutes: 6000 }
`;
      const { workspace, key } = await t.workspace({ config: file(T0 + 120 * MIN) });
      const first = await submit(t, key, 'pay', 'other-bot');
      const asked = ['request ann@acme.test', 'request bob@acme.test'];
      // Ann is away from T0 + 60 min, but Dan, her delegate, is away until T0 + 90 min: Ann is still asked.
      await t.clock.advanceTo(T0 + 60 * MIN);
      assert.deepEqual(await jobsOf(t, first), asked);
      await t.clock.advanceTo(T0 + 89 * MIN);
      assert.deepEqual(await jobsOf(t, first), asked);
      // Dan is back: the hold is handed to him.
      await t.clock.advanceTo(T0 + 90 * MIN);
      assert.deepEqual(await jobsOf(t, first), [...asked, 'request dan@acme.test']);

      // Ann's delegation ends; a hold arrives; then it is made to run again: that hold is handed over.
      await t.clock.advanceTo(T0 + 121 * MIN);
      const between = await submit(t, key, 'pay', 'other-bot');
      assert.deepEqual(await jobsOf(t, between), asked);
      await applyConfig(t.service.ctx, workspace, parseConfig(file(T0 + 240 * MIN)));
      await t.clock.advance(1 * MIN);
      assert.deepEqual(await jobsOf(t, between), [...asked, 'request dan@acme.test']);
      assert.deepEqual(await jobsOf(t, first), [...asked, 'request dan@acme.test']);

      // Many holds waiting, handed to a new delegate: 100 in a sweep, the rest in the next.
      const many = [];
      for (let n = 0; n < 101; n++) many.push(await submit(t, key, 'pay', 'other-bot'));
      const toEve = async () =>
        Number(
          (
            await t.service.ctx.db.one<{ n: number }>(
              `SELECT COUNT(*) AS n FROM follow_up_events WHERE workspace_id = $1 AND kind = 'handover'
               AND detail LIKE '%eve@acme.test%'`,
              [workspace.id],
            )
          )?.n,
        );
      await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(file(T0 + 240 * MIN, 'eve@acme.test', t.clock.now())),
      );
      // Each sweep hands over at most 100 (the worker's own rounds may run several between two moves
      // of the clock): all 103 in the end, each once.
      await t.clock.advance(1 * MIN);
      await t.clock.advance(1 * MIN);
      assert.equal(await toEve(), 103);
      await t.clock.advance(1 * MIN);
      assert.equal(await toEve(), 103);
      assert.deepEqual((await jobsOf(t, many.at(-1)!)).at(-1), 'request eve@acme.test');
      await verifiedEvidence(t, key);
    });

    test('an SMS reminder says what is left, and its reply code decides', async (tc) => {
      const sms = await startSmsStub();
      tc.after(() => sms.close());
      const { t } = await start(tc, backend, T0, { ...sms.env, SMS_REPLIES: 'true' });
      const { key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin, phone: '+15550100', channels: [sms] }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, timeout_minutes: 60, remind: [10m] }
`,
      });
      const id = await submit(t, key, 'pay');
      await t.clock.advance(50 * MIN);
      const reminder = await until('the reminder to be texted', async () =>
        sms.calls.find((sent) => sent.form.Body?.startsWith('Reminder')),
      );
      const text = reminder.form.Body!;
      assert.match(text, /^Reminder, 10 min left \(SDK\): pay\(amount=1200\) http/);
      const code = /YES (\d{4})/.exec(text)![1]!;
      const params: Record<string, string> = {
        MessageSid: `SM${randomBytes(16).toString('hex')}`,
        AccountSid: sms.accountSid,
        From: '+15550100',
        To: sms.from,
        Body: `YES ${code}`,
      };
      const signed = Object.keys(params)
        .sort()
        .reduce((data, name) => data + name + params[name], `${t.url}/sms/inbound`);
      const response = await fetch(`${t.url}/sms/inbound`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': createHmac('sha1', sms.authToken).update(signed).digest('base64'),
        },
        body: new URLSearchParams(params).toString(),
      });
      assert.match(await response.text(), /Done: approved\./);
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status, 'approved');
    });

    test('quiet hours hold requests back until they end, in the member time zone; an urgent hold goes at once', async (tc) => {
      // 23:00 in Berlin.
      const night = Date.parse('2026-11-25T22:00:00Z');
      const { t, smtp } = await start(tc, backend, night);
      const { key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: nina@acme.test, name: Nina, role: approver, time_zone: Europe/Berlin, quiet_hours: { from: '20:00', to: '08:00' } }
tools:
  - { connection: SDK, tool: pay, classification: approval }
  - { connection: SDK, tool: page, classification: approval }
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [nina@acme.test], timeout_minutes: 720 }
  - { name: Pages, tool: page, effect: approval, approvers: [nina@acme.test], timeout_minutes: 60 }
`,
      });
      const calm = await submit(t, key, 'pay');
      const urgent = await submit(t, key, 'page');
      const due = async (holdId: string) =>
        (await t.service.ctx.db.one<{ due: number }>(
          'SELECT next_attempt_at AS due FROM notifications WHERE hold_id = $1',
          [holdId],
        ))!.due;
      // 08:00 Berlin is 07:00 UTC; the urgent hold's deadline (23:00 UTC) comes before that.
      assert.equal(await due(calm), Date.parse('2026-11-26T07:00:00Z'));
      assert.equal(await due(urgent), night);
      await until('the urgent request to reach Nina', async () => mailsTo(smtp, 'nina@acme.test')[0]);
      // Absent for the rest of the night: the workers ran at 07:59 (Berlin) and nothing else went out.
      await t.clock.advanceTo(Date.parse('2026-11-26T06:59:00Z'));
      await t.settled();
      assert.equal(mailsTo(smtp, 'nina@acme.test').length, 1);
      await t.clock.advanceTo(Date.parse('2026-11-26T07:00:00Z'));
      await until('the morning request to reach Nina', async () => mailsTo(smtp, 'nina@acme.test')[1]);
    });

    test('a request held back by quiet hours is dropped when the member decided meanwhile', async (tc) => {
      const night = Date.parse('2026-11-25T22:00:00Z');
      const { t, smtp } = await start(tc, backend, night);
      const { workspace, key } = await t.workspace({
        config: `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin, quiet_hours: { from: '20:00', to: '08:00' } }
  - { email: bob@acme.test, name: Bob, role: approver }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [admin@acme.test, bob@acme.test], approvals_required: 2, timeout_minutes: 720 }
`,
      });
      const id = await submit(t, key, 'pay');
      // The admin decides in the app at 06:00, before the request was due to go out at 08:00; the hold
      // still waits for Bob.
      await t.clock.advanceTo(Date.parse('2026-11-26T06:00:00Z'));
      assert.equal((await decideAs(t, workspace.id, id, 'approve')).outcome, 'recorded');
      await t.clock.advanceTo(Date.parse('2026-11-26T08:00:00Z'));
      await until('the held request to be done', async () => {
        const job = await t.service.ctx.db.one<{ state: string }>(
          `SELECT n.state FROM notifications n JOIN members m ON m.id = n.member_id
           WHERE n.hold_id = $1 AND n.kind = 'request' AND m.email = 'admin@acme.test'`,
          [id],
        );
        return job?.state === 'pending' ? undefined : job;
      });
      assert.deepEqual(
        (
          await t.service.ctx.db.all<{ state: string }>(
            `SELECT n.state FROM notifications n JOIN members m ON m.id = n.member_id
             WHERE n.hold_id = $1 AND n.kind = 'request' ORDER BY m.email`,
            [id],
          )
        ).map((job) => job.state),
        ['skipped', 'sent'],
      );
      assert.equal(mailsTo(smtp, 'admin@acme.test').length, 0);
    });

    test('a hold whose follow-up fails is tried again later, with growing waits, and holds up no other', async (tc) => {
      const { t } = await start(tc, backend);
      const file = `
notifications: { digest_minutes: 0 }
members: [{ email: admin@acme.test, name: Admin, role: admin }]
remind: [30m]
tools: [{ connection: SDK, tool: pay, classification: approval }]
`;
      const broken = await t.workspace({ config: file });
      const sound = await t.workspace({ config: file });
      const failing = await submit(t, broken.key, 'pay');
      const fine = await submit(t, sound.key, 'pay');
      // A time zone the runtime does not know (written past the file's check) makes the follow-up fail.
      await t.service.ctx.db.run(
        `UPDATE members SET time_zone = 'Mars/Olympus', quiet_hours = '{"from":"20:00","to":"08:00","weekends":false}'
         WHERE workspace_id = $1`,
        [broken.workspace.id],
      );
      await t.clock.advance(210 * MIN);
      assert.deepEqual(
        (await jobsOf(t, fine)).filter((job) => job.startsWith('reminder')),
        ['reminder admin@acme.test'],
      );
      assert.deepEqual(
        (await jobsOf(t, failing)).filter((job) => job.startsWith('reminder')),
        [],
      );
      const nextTry = async () =>
        Number(
          (
            await t.service.ctx.db.one<{ next: number }>(
              'SELECT next_at AS next FROM follow_ups WHERE hold_id = $1',
              [failing],
            )
          )?.next,
        );
      assert.equal(await nextTry(), T0 + 215 * MIN);
      // Each failure in a row waits twice as long as the one before (5, 10, 20 minutes, up to an hour).
      await t.clock.advanceTo(T0 + 215 * MIN);
      assert.equal(await nextTry(), T0 + 225 * MIN);
      await t.clock.advanceTo(T0 + 225 * MIN);
      assert.equal(await nextTry(), T0 + 245 * MIN);
      // The count is stored with the hold, so a restart or another instance goes on with the same waits
      // (back to 0 once it succeeds: the handover test below).
      const stored = await t.service.ctx.db.one<{ n: number }>(
        'SELECT failures AS n FROM follow_ups WHERE hold_id = $1',
        [failing],
      );
      assert.equal(Number(stored?.n), 3);
    });

    test('a handover that fails is tried again 5 minutes later and holds up no other', async (tc) => {
      const { t } = await start(tc, backend);
      const file = `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, delegate: { to: dan@acme.test, from: '${iso(T0 + 10 * MIN)}', until: '${iso(T0 + 600 * MIN)}' } }
  - { email: dan@acme.test, name: Dan, role: approver }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test], timeout_minutes: 6000 }
`;
      const broken = await t.workspace({ config: file });
      const sound = await t.workspace({ config: file });
      const failing = await submit(t, broken.key, 'pay');
      const fine = await submit(t, sound.key, 'pay');
      // A time zone the runtime does not know (written past the file's check) makes asking Dan fail.
      const breakDan = (zone: string) =>
        t.service.ctx.db.run(
          `UPDATE members SET time_zone = $2, quiet_hours = '{"from":"20:00","to":"08:00","weekends":false}'
           WHERE workspace_id = $1 AND email = 'dan@acme.test'`,
          [broken.workspace.id, zone],
        );
      await breakDan('Mars/Olympus');
      await t.clock.advanceTo(T0 + 10 * MIN);
      assert.deepEqual(await jobsOf(t, fine), ['request ann@acme.test', 'request dan@acme.test']);
      assert.deepEqual(await jobsOf(t, failing), ['request ann@acme.test']);
      const after = await t.service.ctx.db.one<{ after: number }>(
        `SELECT delegate_handover_after AS after FROM members WHERE workspace_id = $1 AND email = 'ann@acme.test'`,
        [broken.workspace.id],
      );
      assert.equal(Number(after?.after), T0 + 15 * MIN);
      // Mended, it goes at the next try, not before.
      await breakDan('Europe/Berlin');
      await t.clock.advanceTo(T0 + 14 * MIN);
      assert.deepEqual(await jobsOf(t, failing), ['request ann@acme.test']);
      await t.clock.advanceTo(T0 + 15 * MIN);
      assert.deepEqual(await jobsOf(t, failing), ['request ann@acme.test', 'request dan@acme.test']);
      const stored = await t.service.ctx.db.one<{ failures: number; after: number | null }>(
        `SELECT delegate_handover_failures AS failures, delegate_handover_after AS after FROM members
         WHERE workspace_id = $1 AND email = 'ann@acme.test'`,
        [broken.workspace.id],
      );
      assert.deepEqual(
        { failures: Number(stored?.failures), after: stored?.after ?? null },
        { failures: 0, after: null },
      );
    });

    test('webhooks: hold.escalated, hold.reminded, delegation.changed, and both names on a delegate decision', async (tc) => {
      const receiver = await startReceiver({ ignore: isCheckpointEvent });
      tc.after(() => receiver.close());
      const { t } = await start(tc, backend, T0, {
        ALLOW_PRIVATE_TARGETS: 'true',
        WEBHOOK_RETRY_SCALE: '0.001',
      });
      const file = (delegate: string) => `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver${delegate} }
  - { email: dan@acme.test, name: Dan, role: approver }
webhook: { url: '${receiver.url}' }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test], timeout_minutes: 60, remind: [30m], escalate: { after: 10m, to: [role:admin] } }
`;
      const { workspace, key } = await t.workspace({ config: file('') });
      const id = await submit(t, key, 'pay');
      // One step at a time: a member the escalation has just asked is not reminded in the same round.
      await t.clock.advance(10 * MIN);
      await t.clock.advance(20 * MIN);
      const events = await receiver.waitFor(2);
      const bodies = events.map((event) => JSON.parse(event.body));
      assert.deepEqual(
        bodies.map((body) => [body.event, body.id]),
        [
          ['hold.escalated', id],
          ['hold.reminded', id],
        ],
      );
      assert.deepEqual(bodies[0].data.added, ['role:admin']);
      assert.deepEqual(bodies[1].data.reminded, ['admin@acme.test', 'ann@acme.test']);
      assert.equal(bodies[1].data.seconds_left, 1800);

      const delegate = `, delegate: { to: dan@acme.test, from: '${iso(T0)}', until: '${iso(T0 + 600 * MIN)}' }`;
      await applyConfig(t.service.ctx, workspace, parseConfig(file(delegate)));
      const [changed] = (await receiver.waitFor(3)).slice(2).map((event) => JSON.parse(event.body));
      assert.equal(changed.event, 'delegation.changed');
      assert.deepEqual(changed.data, {
        orgId: workspace.id,
        member: 'ann@acme.test',
        delegate: 'dan@acme.test',
        from: iso(T0),
        until: iso(T0 + 600 * MIN),
      });
      assert.equal((await decideAs(t, workspace.id, id, 'approve', 'dan@acme.test')).outcome, 'recorded');
      const [approved] = (await receiver.waitFor(4)).slice(3).map((event) => JSON.parse(event.body));
      assert.equal(approved.event, 'hold.approved');
      assert.deepEqual(approved.data.decision, {
        verdict: 'approve',
        reason: null,
        channel: 'inbox',
        decided_by: 'dan@acme.test',
        on_behalf_of: 'ann@acme.test',
      });
    });
  });
}
