/**
 * The rule builder never drops a field: every rule of a workspace file that uses every field a rule can
 * have (those the form shows and those it does not: reminders, escalation, `signed`) is saved unchanged
 * through the form, as a browser sends it, and the export is the same before and after. And the
 * builder's addresses from before its routes named the rule answer with where it is now.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { exportConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann Approver, role: approver }
  - { email: olga@acme.test, name: Olga Oncall, role: approver }
groups:
  finance: [ann@acme.test, olga@acme.test]
  oncall: [olga@acme.test]
rules:
  - name: Every field of an approval rule
    connection: SDK
    tool: "pay.*"
    agent: "billing-*"
    when:
      - { arg: amount, op: gt, value: 1000 }
      - { arg: code, op: gte, value: "1000" }
      - { arg: currency, op: in, value: [EUR, CHF] }
      - { arg: zip, op: not_in, value: ["10115", "80331"] }
      - { arg: ids, op: in, value: [1, 2.5] }
      - { arg: pairs, op: in, value: ["a,b", c] }
      - { arg: memo, op: matches, value: " ^wire " }
      - { arg: tags, op: contains, value: urgent }
      - { arg: list, op: eq, value: [a, b] }
      - { arg: blank, op: eq, value: "" }
      - { arg: flag, op: ne, value: true }
      - { arg: nothing, op: eq, value: null }
      - { arg: object, op: eq, value: { a: 1 } }
      - { arg: ticket, op: exists }
      - { arg: sudo, op: exists, value: false }
      - { arg: count, op: lte, value: -2.5e3 }
    frequency: { more_than: 3, per: hour, by: tool_and_agent }
    effect: approval
    approvers: [group:finance, ann@acme.test, role:admin]
    approvals_required: 2
    timeout_minutes: 120
    remind: { before: [30m, 10m], every: 20m }
    escalate:
      - { after: 15m, to: [group:oncall] }
      - { after: 1h, to: [role:admin] }
    signed: true
    bulk: true
    claim: { minutes: 45, halts_escalation: true }
  - { name: Signed off, tool: "wire.*", effect: approval, signed: false, remind: [5m] }
  - { name: Denied with a reason, tool: shell.run, agent: ops, effect: deny, reason: "Not from agents" }
  - { name: Denied plainly, connection: Files, tool: files.delete, effect: deny }
  - { name: "Refunds / chargebacks? 100% #1 & more", tool: refund, effect: approval, timeout_minutes: 5 }
  - name: Four eyes in bulk
    tool: "bulk.*"
    effect: approval
    approvers: [group:finance]
    approvals_required: 2
    bulk: true
    claim: { minutes: 30 }
  - { name: One at a time, tool: single, effect: approval, bulk: false, claim: { halts_escalation: false } }
  - name: Allowed by day
    tool: report.export
    when: [{ arg: rows, op: lt, value: 100 }]
    frequency: { more_than: 0, per: day, by: agent }
    effect: allow
`;

for (const backend of backends) {
  describe(`the rule builder on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let admin: Session;
    const { get, post, signIn } = appClient(() => t);
    const config = () => exportConfig(t.service.ctx, workspace);
    const ruleUrl = (name: string) => `/app/admin/rules/${encodeURIComponent(name)}`;

    before(async () => {
      t = await startTestService(backend);
      ({ workspace } = await t.workspace({ config: WORKSPACE }));
      admin = await signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    test('every rule, saved through the form as shown, leaves the export as it was', async () => {
      const before = await config();
      assert.equal(before.rules?.length, 8);
      assert.equal(before.rules?.[0]?.when?.length, 16);
      for (const rule of before.rules!) {
        const form = await get(admin, ruleUrl(rule.name));
        assert.equal(form.status, 200, rule.name);
        const fields = formFields(form.text, ruleUrl(rule.name));
        const saved = await post(admin, ruleUrl(rule.name), [...fields, ['action', 'save']]);
        assert.equal(saved.status, 303, `${rule.name}: ${saved.text.slice(0, 3000)}`);
        assert.equal(saved.notice, 'saved');
      }
      assert.deepEqual(await config(), before);
    });

    test("the list says each approval rule's reminders, escalation, signing, bulk and claim", async () => {
      const list = await get(admin, '/app/admin/rules');
      assert.match(
        list.text,
        /reminds 30m, 10m before; reminds every 20m; escalates after 15m, 1h; signed; in bulk; claims last 45 min; a claim halts escalation/,
      );
      assert.match(list.text, />not in bulk</);
    });

    test('changing only the deadline keeps reminders, escalation, signing, bulk and claim', async () => {
      const name = 'Every field of an approval rule';
      const before = (await config()).rules!.find((rule) => rule.name === name)!;
      const form = await get(admin, ruleUrl(name));
      const fields = formFields(form.text, ruleUrl(name)).map(([field, value]): [string, string] => [
        field,
        field === 'timeout_minutes' ? '180' : value,
      ]);
      const saved = await post(admin, ruleUrl(name), [...fields, ['action', 'save']]);
      assert.equal(saved.status, 303, saved.text.slice(0, 3000));
      const after = (await config()).rules!.find((rule) => rule.name === name)!;
      assert.deepEqual(after, { ...before, timeout_minutes: 180 });
    });

    test('the preview replays a rule with every field, and its Save button saves it as it was', async () => {
      const before = await config();
      const url = ruleUrl('Every field of an approval rule');
      const form = await get(admin, url);
      const previewed = await post(admin, url, [...formFields(form.text, url), ['action', 'preview']]);
      assert.equal(previewed.status, 200, previewed.text.slice(0, 3000));
      assert.match(previewed.text, /Preview: the last 30 days with this rule/);
      // The preview's own form comes first: the draft as hidden fields.
      const saved = await post(admin, url, [...formFields(previewed.text, url), ['action', 'save']]);
      assert.equal(saved.status, 303, saved.text.slice(0, 3000));
      assert.deepEqual(await config(), before);
    });

    test('a refused rule: the problems in form order, each linked to its field, in words', async () => {
      const form = await get(admin, '/app/admin/rules?new');
      const fields = new Map(formFields(form.text, '/app/admin/rules'));
      const typed = {
        ...Object.fromEntries(fields),
        name: ' ',
        tool: 'pay',
        effect: 'approval',
        approvals_required: '25',
        remind_every: 'hourly',
        esc_after_0: '15m',
        esc_to_0: 'group:nobody',
        esc_after_1: '2h',
        claim_minutes: '2000',
        action: 'save',
      };
      const refused = await post(admin, '/app/admin/rules', typed);
      assert.equal(refused.status, 422);
      const start = refused.text.indexOf('id="problems"');
      const summary = refused.text.slice(start, refused.text.indexOf('</ul>', start));
      const items = [...summary.matchAll(/<li><a href="#([\w-]+)">([^<]+)<\/a>: ([^<]+)<\/li>/g)];
      assert.deepEqual(
        items.map(([, id, label, message]) => [id, label, message]),
        [
          ['r-name', 'Name', 'Name is required.'],
          ['r-approvals', 'Approvals required', 'Must be a whole number from 1 to 20.'],
          ['r-remind-every', 'Remind every', 'Write a duration like 30m, 2h or 1d.'],
          ['e0-to', 'Escalation step 1, approvers', 'Names no group of the workspace.'],
          ['e1-to', 'Escalation step 2, approvers', 'Choose at least one approver to add.'],
          ['r-claim-minutes', '“I’m on it” lasts', 'Must be a whole number of minutes from 1 to 1440.'],
        ],
        summary,
      );
      assert.doesNotMatch(refused.text, /Too (small|big)|expected/);
      // Each link goes to a field of the form, which comes back as typed.
      for (const [, id] of items) assert.match(refused.text, new RegExp(`id="${id}"`));
      assert.match(refused.text, /name="esc_after_1"[^>]*value="2h"/s);
    });

    test("the builder's old addresses answer with the new ones; a rule named like one is edited", async () => {
      const edit = await get(admin, `/app/admin/rules/edit?rule=${encodeURIComponent('Signed off')}`);
      assert.equal(edit.status, 301);
      assert.equal(edit.location, ruleUrl('Signed off'));
      const add = await get(admin, '/app/admin/rules/new?connection=SDK&tool=pay.send');
      assert.equal(add.status, 301);
      assert.equal(add.location, '/app/admin/rules?new=&connection=SDK&tool=pay.send');
      const form = await get(admin, add.location!);
      assert.match(form.text, /<h1>New rule<\/h1>/);
      assert.match(form.text, /name="tool"[^>]*value="pay\.send"/s);

      const named = await post(admin, '/app/admin/rules', {
        name: 'new',
        tool: 'x',
        effect: 'deny',
        action: 'save',
      });
      assert.equal(named.status, 303, named.text.slice(0, 2000));
      const own = await get(admin, '/app/admin/rules/new');
      assert.equal(own.status, 200);
      assert.match(own.text, /<h1>Edit rule “new”<\/h1>/);
      assert.equal((await get(admin, '/app/admin/rules/nothing')).status, 404);
    });
  });
}
