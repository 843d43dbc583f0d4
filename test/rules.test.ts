/** The decision engine end to end: rules applied with `apply`, calls through POST /api/v1/holds. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { decideFromSlack } from '../src/services/channel-decisions.ts';
import { decideHold } from '../src/services/decide-hold.ts';
import { decideByLink, mintDecisionLink } from '../src/services/decision-links.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { findWorkspace } from '../src/store/workspaces.ts';
import { ServiceError } from '../src/services/errors.ts';
import { followUpsText, simulatePolicy } from '../src/services/simulate-policy.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const MEMBERS = `members:
  - { email: alice@acme.test, name: Alice, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: carol@acme.test, name: Carol, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
groups: { finance: [alice@acme.test, bob@acme.test] }
`;

for (const backend of backends) {
  describe(`decision engine on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    /** A workspace with the members above and these rules; returns a submit function. */
    async function withRules(rules: string, extra = '') {
      const { workspace, key } = await t.workspace({ config: `${MEMBERS}${extra}rules:\n${rules}` });
      const submit = async (fields: Record<string, unknown>) => {
        const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(fields) });
        assert.equal(answer.status, 201, answer.text);
        const record = await call(t.url, 'GET', `/api/v1/holds/${answer.body.id}`, { key });
        return { id: answer.body.id as string, status: answer.body.status as string, record: record.body };
      };
      return { workspace, key, submit };
    }

    const evidenceOf = async (workspaceId: string, holdId: string) => {
      const rows = await t.service.ctx.db.all<{ data: string }>(
        "SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'hold.submitted' ORDER BY seq",
        [workspaceId],
      );
      return rows.map((row) => JSON.parse(row.data)).find((data) => data.hold === holdId);
    };

    test('every operator, with typed comparison, through the API', async () => {
      const cases: [string, unknown, Record<string, unknown>, Record<string, unknown>][] = [
        ['eq', 'EUR', { currency: 'EUR' }, { currency: 'eur' }],
        ['ne', 'EUR', { currency: 'USD' }, { currency: 'EUR' }],
        ['gt', 1000, { amount: 1000.5 }, { amount: 1000 }],
        ['gte', 1000, { amount: 1000 }, { amount: 999 }],
        ['lt', 10, { amount: 9 }, { amount: 10 }],
        ['lte', 10, { amount: 10 }, { amount: 11 }],
        ['in', ['DE', 'FR'], { country: 'FR' }, { country: 'IT' }],
        ['not_in', ['DE', 'FR'], { country: 'IT' }, { country: 'DE' }],
        ['contains', 'prod', { target: 'db-prod-1' }, { target: 'db-staging' }],
        ['contains', 'admin', { roles: ['user', 'admin'] }, { roles: ['user'] }],
        ['matches', '^[0-9]{4}-PROD$', { ticket: '1234-PROD' }, { ticket: 'x1234-PROD' }],
        ['exists', true, { approved_by: null }, { other: 1 }],
      ];
      for (const [op, value, hit, miss] of cases) {
        const arg = Object.keys(hit)[0]!;
        const { submit } = await withRules(
          `  - { name: "op ${op}", tool: "op.*", when: [ { arg: ${arg}, op: ${op}, value: ${JSON.stringify(value)} } ], effect: deny }\n`,
          'tools:\n  - { connection: SDK, tool: op.call, classification: allow }\n',
        );
        assert.equal(
          (await submit({ tool_name: 'op.call', arguments: hit })).status,
          'denied',
          `${op} should match`,
        );
        assert.equal(
          (await submit({ tool_name: 'op.call', arguments: miss })).status,
          'allowed',
          `${op} should not match`,
        );
      }
    });

    test('dotted paths into nested arguments; a missing argument never matches', async () => {
      const { submit } = await withRules(
        '  - { name: Foreign wires, tool: wire, when: [ { arg: beneficiary.bank.country, op: ne, value: DE } ], effect: deny }\n',
        'tools:\n  - { connection: SDK, tool: wire, classification: allow }\n',
      );
      const denied = await submit({
        tool_name: 'wire',
        arguments: { beneficiary: { bank: { country: 'US' } } },
      });
      assert.equal(denied.status, 'denied');
      assert.equal(denied.record.decision.reason, 'Denied by rule: Foreign wires');
      assert.equal(
        (await submit({ tool_name: 'wire', arguments: { beneficiary: { bank: { country: 'DE' } } } })).status,
        'allowed',
      );
      assert.equal((await submit({ tool_name: 'wire', arguments: { beneficiary: {} } })).status, 'allowed');
    });

    test('a value of the wrong type fails closed: approval and deny rules apply, allow rules do not', async () => {
      const transfer = 'tools:\n  - { connection: SDK, tool: transfer, classification: allow }\n';
      const wrong = [{ amount: '5000' }, { amount: [5000] }, { amount: { value: 5000 } }];
      const types = ['string', 'array', 'object'];
      const held = await withRules(
        '  - { name: Large transfers, tool: transfer, when: [ { arg: amount, op: gt, value: 1000 } ], effect: approval }\n',
        transfer,
      );
      for (const [i, args] of wrong.entries()) {
        const hold = await held.submit({ tool_name: 'transfer', arguments: args });
        assert.equal(hold.status, 'pending', JSON.stringify(args));
        const evidence = await evidenceOf(held.workspace.id, hold.id);
        assert.equal(evidence.rule, 'Large transfers');
        assert.deepEqual(evidence.facts.conditions, [
          {
            arg: 'amount',
            op: 'gt',
            value: 1000,
            actual: args.amount,
            type_mismatch: { type: types[i], needs: 'number' },
          },
        ]);
      }
      assert.equal(
        (await held.submit({ tool_name: 'transfer', arguments: { amount: 5 } })).status,
        'allowed',
      );
      assert.equal((await held.submit({ tool_name: 'transfer', arguments: {} })).status, 'allowed');

      const denied = await withRules(
        '  - { name: No large transfers, tool: transfer, when: [ { arg: amount, op: gt, value: 1000 } ], effect: deny }\n',
        transfer,
      );
      for (const args of wrong) {
        const hold = await denied.submit({ tool_name: 'transfer', arguments: args });
        assert.equal(hold.status, 'denied', JSON.stringify(args));
        assert.equal(hold.record.decision.reason, 'Denied by rule: No large transfers');
      }

      // An allow rule never changes what a classification holds or denies; what shows that it did not
      // apply is the deciding rule and the rules that matched.
      const allowed = await withRules(
        '  - { name: Small transfers, tool: transfer, when: [ { arg: amount, op: lt, value: 100 } ], effect: allow }\n',
        transfer,
      );
      const quoted = await allowed.submit({ tool_name: 'transfer', arguments: { amount: '5' } });
      const quotedEvidence = await evidenceOf(allowed.workspace.id, quoted.id);
      assert.equal(quotedEvidence.rule, 'Tool classified allow');
      assert.deepEqual(quotedEvidence.facts.matched_rules, []);
      const number = await allowed.submit({ tool_name: 'transfer', arguments: { amount: 5 } });
      assert.equal((await evidenceOf(allowed.workspace.id, number.id)).rule, 'Small transfers');
    });

    test('precedence: deny beats approval beats allow; a deny rule gives its reason', async () => {
      const { submit } = await withRules(
        `  - { name: Allow reads, tool: "db.*", effect: allow }
  - { name: Review writes, tool: "db.write", effect: approval }
  - { name: Never drop, tool: "db.write", when: [ { arg: sql, op: matches, value: "(?i)drop table" } ], effect: deny, reason: "Dropping tables is not allowed" }
`,
        'tools:\n  - { connection: SDK, tool: db.read, classification: allow }\n  - { connection: SDK, tool: db.write, classification: allow }\n',
      );
      assert.equal((await submit({ tool_name: 'db.read' })).status, 'allowed');
      assert.equal((await submit({ tool_name: 'db.write', arguments: { sql: 'insert' } })).status, 'pending');
      const dropped = await submit({ tool_name: 'db.write', arguments: { sql: 'DROP TABLE users' } });
      assert.equal(dropped.status, 'denied');
      assert.equal(dropped.record.decision.reason, 'Dropping tables is not allowed');
      assert.equal(dropped.record.decision.channel, 'rule');
    });

    test('a new tool is held for admins even when an allow rule matches', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Allow everything, tool: "*", effect: allow }\n',
      );
      const held = await submit({ tool_name: 'never.seen' });
      assert.equal(held.status, 'pending');
      const evidence = await evidenceOf(workspace.id, held.id);
      assert.equal(evidence.rule, 'New tool: needs classification');
      assert.deepEqual(evidence.facts.matched_rules, ['Allow everything']);
    });

    test('frequency: the 21st call in an hour is held when the limit is 20, counted per tool', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Burst, tool: export, frequency: { more_than: 20, per: hour, by: tool }, effect: approval }\n',
        'tools:\n  - { connection: SDK, tool: export, classification: allow }\n  - { connection: SDK, tool: other, classification: allow }\n',
      );
      for (let i = 1; i <= 20; i++)
        assert.equal((await submit({ tool_name: 'export' })).status, 'allowed', `call ${i}`);
      assert.equal((await submit({ tool_name: 'other' })).status, 'allowed');
      const held = await submit({ tool_name: 'export' });
      assert.equal(held.status, 'pending');
      const evidence = await evidenceOf(workspace.id, held.id);
      assert.equal(evidence.rule, 'Burst');
      assert.deepEqual(evidence.facts.frequency, { more_than: 20, per: 'hour', by: 'tool', count: 21 });
      // An hour later the window is empty again.
      t.clock.advance(3_600_000 + 1000);
      try {
        assert.equal((await submit({ tool_name: 'export' })).status, 'allowed');
      } finally {
        t.clock.advance(-(3_600_000 + 1000));
      }
    });

    test('frequency is exact under concurrent submits, and can count by agent', async () => {
      const { submit } = await withRules(
        '  - { name: Agent burst, tool: "*", frequency: { more_than: 10, per: minute, by: agent }, effect: deny }\n',
        'tools:\n  - { connection: SDK, tool: ping, classification: allow }\n',
      );
      const answers = await Promise.all(
        Array.from({ length: 15 }, () => submit({ tool_name: 'ping', agent_identity: { id: 'busy-agent' } })),
      );
      const statuses = answers.map((a) => a.status);
      assert.equal(statuses.filter((s) => s === 'allowed').length, 10);
      assert.equal(statuses.filter((s) => s === 'denied').length, 5);
      assert.equal(
        (await submit({ tool_name: 'ping', agent_identity: { id: 'calm-agent' } })).status,
        'allowed',
      );
    });

    test('four-eyes: one approval keeps it pending, the second approves; members count once', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Two approvers, tool: pay, effect: approval, approvers: ["group:finance", "carol@acme.test"], approvals_required: 2 }\n',
      );
      const held = await submit({ tool_name: 'pay' });
      assert.deepEqual(held.record.approvals, { required: 2, received: 0 });
      assert.equal(
        (await decideAs(t, workspace.id, held.id, 'approve', 'bob@acme.test')).outcome,
        'recorded',
      );
      assert.equal(
        (await decideAs(t, workspace.id, held.id, 'approve', 'bob@acme.test')).outcome,
        'already_decided',
      );
      let record = (await t.service.ctx.db.one<{ status: string; approvals_received: number }>(
        'SELECT status, approvals_received FROM holds WHERE id = $1',
        [held.id],
      ))!;
      assert.deepEqual([record.status, record.approvals_received], ['pending', 1]);
      // A viewer and a non-approver cannot help.
      assert.equal(
        (await decideAs(t, workspace.id, held.id, 'approve', 'vic@acme.test')).outcome,
        'not_an_approver',
      );
      assert.equal(
        (await decideAs(t, workspace.id, held.id, 'approve', 'carol@acme.test')).outcome,
        'recorded',
      );
      record = (await t.service.ctx.db.one('SELECT status, approvals_received FROM holds WHERE id = $1', [
        held.id,
      ]))!;
      assert.deepEqual([record.status, record.approvals_received], ['approved', 2]);
    });

    test('four-eyes: one member deciding at once by inbox, link, Slack and widget counts once', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Two approvers, tool: pay, effect: approval, approvers: ["group:finance", "carol@acme.test"], approvals_required: 2 }\n',
      );
      await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(
          MEMBERS.replace('name: Bob, role: approver', 'name: Bob, role: approver, slack_user_id: U0BOB') +
            'rules:\n  - { name: Two approvers, tool: pay, effect: approval, approvers: ["group:finance", "carol@acme.test"], approvals_required: 2 }\n',
        ),
      );
      const held = await submit({ tool_name: 'pay' });
      const { ctx } = t.service;
      const bob = (await findMemberByEmail(ctx.db, workspace.id, 'bob@acme.test'))!;
      const hold = (await findHold(ctx.db, workspace.id, held.id))!;
      const links = await Promise.all(
        [1, 2, 3].map(() => mintDecisionLink(ctx, { hold, memberId: bob.id, channel: 'email' })),
      );
      const outcomes = await Promise.all([
        ...[1, 2, 3].map(() => decideAs(t, workspace.id, held.id, 'approve', 'bob@acme.test')),
        ...links.map((link) => decideByLink(ctx, new URL(link).pathname.slice(3), { verdict: 'approve' })),
        ...[1, 2, 3].map((n) =>
          decideFromSlack(ctx, {
            slackUserId: 'U0BOB',
            holdId: held.id,
            verdict: 'approve',
            replayKey: `r${n}`,
          }),
        ),
        ...[1, 2, 3].map(() =>
          decideHold(ctx, {
            workspaceId: workspace.id,
            holdId: held.id,
            memberId: bob.id,
            verdict: 'approve',
            channel: 'widget',
          }),
        ),
      ]);
      assert.equal(outcomes.filter((o) => o.outcome === 'recorded').length, 1, JSON.stringify(outcomes));
      const record = (await ctx.db.one<{ status: string; approvals_received: number }>(
        'SELECT status, approvals_received FROM holds WHERE id = $1',
        [held.id],
      ))!;
      assert.deepEqual([record.status, Number(record.approvals_received)], ['pending', 1]);
      const rows = await ctx.db.all('SELECT member_id FROM hold_decisions WHERE hold_id = $1', [held.id]);
      assert.equal(rows.length, 1);
      const entries = await ctx.db.one<{ n: number }>(
        "SELECT COUNT(*) AS n FROM evidence WHERE workspace_id = $1 AND type LIKE 'hold.%' AND type <> 'hold.submitted'",
        [workspace.id],
      );
      assert.equal(Number(entries!.n), 1, 'one evidence entry');
    });

    test('four-eyes: any rejection is final at once', async () => {
      const { workspace, key, submit } = await withRules(
        '  - { name: Two approvers, tool: pay, effect: approval, approvers: ["group:finance"], approvals_required: 2 }\n',
      );
      const held = await submit({ tool_name: 'pay' });
      await decideAs(t, workspace.id, held.id, 'approve', 'alice@acme.test');
      await decideAs(t, workspace.id, held.id, 'reject', 'bob@acme.test', 'not this month');
      const { body } = await call(t.url, 'GET', `/api/v1/holds/${held.id}`, { key });
      assert.equal(body.status, 'rejected');
      assert.deepEqual(body.decision.reason, 'not this month');
      assert.deepEqual(body.approvals, { required: 2, received: 1 });
    });

    test('the strictest approval rule decides: most approvals, then the shortest deadline', async () => {
      const { submit } = await withRules(
        `  - { name: Slow single, tool: pay, effect: approval, timeout_minutes: 600 }
  - { name: Quick single, tool: pay, effect: approval, timeout_minutes: 5 }
  - { name: Double, tool: pay, when: [ { arg: amount, op: gt, value: 100 } ], effect: approval, approvers: ["group:finance"], approvals_required: 2, timeout_minutes: 60 }
`,
      );
      const small = await submit({ tool_name: 'pay', arguments: { amount: 1 } });
      assert.equal(Date.parse(small.record.expires_at) - Date.parse(small.record.created_at), 5 * 60_000);
      const large = await submit({ tool_name: 'pay', arguments: { amount: 1000 } });
      assert.equal(large.record.approvals.required, 2);
      assert.equal(Date.parse(large.record.expires_at) - Date.parse(large.record.created_at), 60 * 60_000);
    });

    test('per-rule deadlines: a 1-minute rule expires its hold after a minute', async () => {
      const { key, submit } = await withRules(
        '  - { name: Fast, tool: pay, effect: approval, timeout_minutes: 1 }\n',
      );
      const held = await submit({ tool_name: 'pay' });
      t.clock.advance(61_000);
      try {
        const { body } = await call(t.url, 'GET', `/api/v1/holds/${held.id}`, { key });
        assert.equal(body.status, 'expired');
      } finally {
        t.clock.advance(-61_000);
      }
    });

    test('apply validates the whole file with line numbers and changes nothing on error', async () => {
      const { workspace } = await t.workspace({ config: MEMBERS });
      const bad = `${MEMBERS}rules:
  - name: Dup
    tool: pay
    effect: approval
    approvers: [ "group:nobody" ]
  - name: Dup
    tool: pay
    effect: approval
    approvals_required: 3
    approvers: [ "carol@acme.test", "vic@acme.test" ]
`;
      const before = await exportConfig(t.service.ctx, workspace);
      const error = await applyConfig(t.service.ctx, workspace, parseConfig(bad)).catch((e: unknown) => e);
      assert.ok(error instanceof ServiceError);
      const lines = error.issues.map((i) => `${i.line} ${i.field}`);
      assert.deepEqual(lines, ['11 rules.0.approvers.0', '12 rules.1.name', '15 rules.1.approvals_required']);
      assert.deepEqual(await exportConfig(t.service.ctx, workspace), before);
      assert.throws(
        () => parseConfig('rules:\n  - { name: x, tool: y, effect: maybe }\n'),
        /line 2: rules\.0\.effect/,
      );
      assert.throws(
        () =>
          parseConfig(
            'rules: [ { name: x, tool: y, effect: deny, when: [ { arg: a, op: in, value: 3 } ] } ]',
          ),
        /rules\.0\.when\.0\.value: must be a list/,
      );
    });

    test('apply checks the workspace as it would be: stored rules keep the approvers they need', async () => {
      const { workspace } = await withRules(
        '  - { name: Two of finance, tool: pay, effect: approval, approvers: ["group:finance"], approvals_required: 2 }\n',
      );
      const withoutBob = `members:
  - { email: alice@acme.test, name: Alice, role: admin }
  - { email: carol@acme.test, name: Carol, role: approver }
`;
      const error = await applyConfig(t.service.ctx, workspace, parseConfig(withoutBob)).catch(
        (e: unknown) => e,
      );
      assert.ok(error instanceof ServiceError);
      assert.match(error.message, /stored rule "Two of finance"\) needs 2 distinct approvers but only 1/);
      assert.throws(
        () => parseConfig('rules:\n  - { name: d, tool: x, effect: deny, timeout_minutes: 5 }\n'),
        /line 2: rules\.0\.timeout_minutes: only an approval rule has timeout_minutes/,
      );
      // A repeat window: whole minutes from 0 to a day, on approval and deny rules only.
      assert.throws(
        () => parseConfig('rules:\n  - { name: a, tool: x, effect: allow, repeat_window_minutes: 5 }\n'),
        /rules\.0\.repeat_window_minutes: an allow rule has no repeat_window_minutes/,
      );
      for (const bad of ['-1', '1441', '2.5', '"5"'])
        assert.throws(
          () =>
            parseConfig(`rules:\n  - { name: d, tool: x, effect: deny, repeat_window_minutes: ${bad} }\n`),
          /rules\.0\.repeat_window_minutes/,
          bad,
        );
      parseConfig('rules:\n  - { name: d, tool: x, effect: deny, repeat_window_minutes: 0 }\n');
      const twice = await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(`groups:\n  finance: [alice@acme.test, bob@acme.test, Bob@acme.test]\n`),
      ).catch((e: unknown) => e);
      assert.ok(twice instanceof ServiceError);
      assert.match(twice.message, /line 2: groups\.finance\.2: is listed twice/);
    });

    test('export gives back what apply took; applying it again changes nothing', async () => {
      const rules = `  - { name: Big, connection: SDK, tool: "pay*", agent: "bot-?", when: [ { arg: amount, op: gte, value: 5 } ], frequency: { more_than: 3, per: day, by: tool_and_agent }, effect: approval, approvers: ["group:finance"], approvals_required: 2, timeout_minutes: 30 }\n`;
      const { workspace } = await withRules(
        rules,
        'tools:\n  - { connection: SDK, tool: pay, classification: approval }\n',
      );
      const exported = await exportConfig(t.service.ctx, workspace);
      assert.equal(exported.rules![0]!.name, 'Big');
      assert.deepEqual(exported.groups, { finance: ['alice@acme.test', 'bob@acme.test'] });
      assert.deepEqual(exported.tools, [{ connection: 'SDK', tool: 'pay', classification: 'approval' }]);
      await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(exported)));
      assert.deepEqual(await exportConfig(t.service.ctx, workspace), exported);
    });

    test('simulate: replays stored calls against a draft and reports the differences', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Allow pay, tool: pay, effect: allow }\n',
        'tools:\n  - { connection: SDK, tool: pay, classification: allow }\n',
      );
      for (const amount of [10, 50, 5000, 7000, '9000'])
        await submit({ tool_name: 'pay', arguments: { amount } });
      const draft = parseConfig(`rules:
  - { name: Allow pay, tool: pay, effect: allow }
  - { name: Big pay, tool: pay, when: [ { arg: amount, op: gt, value: 1000 } ], effect: approval, approvals_required: 1 }
`);
      const report = await simulatePolicy(t.service.ctx, workspace, draft, { sinceMs: 86_400_000 });
      assert.equal(report.holds, 5);
      assert.equal(report.changed, 3);
      assert.equal(report.unchanged, 2);
      assert.deepEqual(report.transitions, [{ from: 'allow', to: 'approval', count: 3 }]);
      // A quoted amount is held too, and the draft's decision says why.
      assert.deepEqual(
        report.examples.map((e) => [e.actual.rule, e.draft.rule, e.draft.type_mismatches]),
        [
          ['Allow pay', 'Big pay', []],
          ['Allow pay', 'Big pay', []],
          ['Allow pay', 'Big pay', [{ arg: 'amount', type: 'string', needs: 'number' }]],
        ],
      );
      const frequencyDraft = parseConfig(
        'rules:\n  - { name: Burst, tool: pay, frequency: { more_than: 2, per: hour, by: tool }, effect: deny }\n',
      );
      const burst = await simulatePolicy(t.service.ctx, workspace, frequencyDraft, { sinceMs: 86_400_000 });
      assert.deepEqual(burst.transitions, [{ from: 'allow', to: 'deny', count: 3 }]);
    });

    test('simulate: the reminders and escalation steps each call the draft makes pending would get', async () => {
      const { workspace, submit } = await withRules(
        '  - { name: Allow deploy, tool: deploy, effect: allow }\n',
        `remind: { every: 1h }
tools:
  - { connection: SDK, tool: deploy, classification: allow }
  - { connection: SDK, tool: wire, classification: approval }
`,
      );
      for (const tool of ['deploy', 'deploy', 'wire']) await submit({ tool_name: tool });
      const rules = `rules:
  - name: Deploys
    tool: deploy
    effect: approval
    approvers: [bob@acme.test]
    timeout_minutes: 120
    remind: [30m, 5m]
    escalate: [{ after: 15m, to: [group:finance, carol@acme.test] }, { after: 45m, to: [role:admin] }]
`;
      // As a request reads it: with the default reminders the file set.
      const stored = (await findWorkspace(t.service.ctx.db, workspace.id))!;
      const simulate = (file: string) =>
        simulatePolicy(t.service.ctx, stored, parseConfig(file), { sinceMs: 86_400_000 });
      const report = await simulate(rules);
      const deploys = {
        remind: { before: ['30m', '5m'], every: null },
        escalate: [
          { after: '15m', to: ['group:finance', 'carol@acme.test'] },
          { after: '45m', to: ['role:admin'] },
        ],
      };
      assert.deepEqual(
        report.examples.map((e) => [e.tool_name, e.actual.effect, e.draft.remind, e.draft.escalate]),
        [
          ['deploy', 'allow', deploys.remind, deploys.escalate],
          ['deploy', 'allow', deploys.remind, deploys.escalate],
        ],
      );
      // Unchanged calls count too: the wire keeps its classification's approval and the workspace's default.
      assert.deepEqual(report.pending, [
        { rule: 'Deploys', holds: 2, ...deploys },
        { rule: 'Tool classified approval', holds: 1, remind: { before: [], every: '1h' }, escalate: [] },
      ]);
      assert.deepEqual(report.pending.map(followUpsText), [
        'escalates after 15m to group:finance and carol@acme.test, after 45m to role:admin; reminds 30m and 5m before the deadline',
        'reminds every 1h',
      ]);

      // The draft's own default replaces the workspace's; a reminder the deadline (240 min) comes first
      // would never be sent, so it is not shown; a draft without any leaves none.
      const ownDefault = await simulate(`remind: { before: [2h], every: 5h }\n${rules}`);
      assert.deepEqual(ownDefault.pending[1]!.remind, { before: ['2h'], every: null });
      assert.equal(followUpsText(ownDefault.pending[1]!), 'reminds 2h before the deadline');
      const none = await simulate(`remind: null\n${rules}`);
      assert.deepEqual(none.pending[1], {
        rule: 'Tool classified approval',
        holds: 1,
        remind: null,
        escalate: [],
      });
      assert.equal(followUpsText(none.pending[1]!), 'no reminders or escalation');
      // Calls the draft allows or denies are not pending and have no follow-ups.
      const allowAll = await simulate(
        'rules: [{ name: All, tool: "*", effect: allow }]\ntools: [{ connection: SDK, tool: wire, classification: allow }]\n',
      );
      assert.deepEqual(allowAll.pending, []);
      assert.deepEqual(
        allowAll.examples.map((e) => [e.draft.effect, e.draft.remind, e.draft.escalate]),
        [['allow', null, []]],
      );
    });
  });
}
