/**
 * The rule builder in Chromium, wide (1280 px) and narrow (390 px): no operator's label is cut in its
 * select, axe-core finds nothing serious in the form nor in a refused one, reminders and escalation
 * steps are filled in and saved by label, as a person would, and a rule using every field shows each in
 * its form and preview (screenshots to SCREENSHOTS_DIR when set: docs/screenshots/rules-*.png).
 */
import { AxeBuilder } from '@axe-core/playwright';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { exportConfig } from '../src/services/apply-config.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: olga@acme.test, name: Olga Oncall, role: approver }
groups:
  oncall: [olga@acme.test]
`;

/** A rule that uses every field the builder shows (issue 39 added the follow-ups and how holds are approved). */
const EVERY_FIELD = `${WORKSPACE}  finance: [admin@acme.test, olga@acme.test]
tools:
  - { connection: SDK, tool: payments.send, classification: approval }
  - { connection: SDK, tool: payments.refund, classification: approval }
rules:
  - name: Large payments need two approvers
    tool: "payments.*"
    agent: "agent-*"
    when: [{ arg: amount, op: gt, value: 1000 }, { arg: currency, op: in, value: [EUR, CHF] }]
    effect: approval
    approvers: ["group:finance"]
    approvals_required: 2
    timeout_minutes: 240
    remind: { before: [1h, 15m], every: 30m }
    escalate: [{ after: 2h, to: ["group:oncall"] }]
    signed: true
    bulk: false
    claim: { minutes: 45, halts_escalation: true }
`;

describe('the rule builder in a browser', { skip: browserSkip }, () => {
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;

  before(async () => {
    [browser, t] = await Promise.all([launchBrowser(), startTestService(sqlite)]);
    ({ workspace } = await t.workspace({ config: WORKSPACE }));
  });
  after(async () => {
    await closeBrowser(browser);
    await t?.close();
  });

  /** Serious and critical violations on the page as it is now. */
  async function violations({ page }: TestPage): Promise<string[]> {
    const result = await new AxeBuilder({ page })
      .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'])
      .analyze();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.help}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  /** The values chosen in a select of several. */
  const chosen = (select: HTMLSelectElement) => [...select.selectedOptions].map((option) => option.value);

  async function signedIn(width: number): Promise<TestPage> {
    const opened = await openPage(browser, { baseURL: t.url, width });
    const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
    await opened.page.goto(url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
    return opened;
  }

  for (const width of [1280, 390]) {
    test(`at ${width} px, every operator's label fits its select; the form passes axe-core`, async () => {
      const opened = await signedIn(width);
      try {
        const { page } = opened;
        await page.goto('/app/admin/rules?new');
        const operator = page.getByRole('group', { name: 'Condition 1' }).getByLabel('Operator');
        // The room a label has: the select's inner width less its arrow (as wide as its font is tall).
        const cut = await operator.evaluate((select: HTMLSelectElement) => {
          const style = getComputedStyle(select);
          const context = document.createElement('canvas').getContext('2d')!;
          context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const room =
            select.clientWidth -
            parseFloat(style.paddingLeft) -
            parseFloat(style.paddingRight) -
            parseFloat(style.fontSize);
          return [...select.options]
            .filter((option) => context.measureText(option.text).width > room)
            .map((option) => option.text);
        });
        assert.deepEqual(cut, []);
        // Nor does the page scroll sideways.
        assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
        assert.deepEqual(await violations(opened), []);
        // Refused, with a problem on a step and one on the claim: the summary links to them.
        await page.getByLabel('Name', { exact: true }).fill('Payments');
        await page.getByLabel(/^Tool/).fill('pay.*');
        await page
          .getByRole('group', { name: 'Step 1' })
          .getByLabel(/^After/)
          .fill('soon');
        await page.getByRole('button', { name: 'Save rule' }).click();
        await page.locator('#problems').waitFor();
        opened.errors.splice(0); // the 422 of the refusal, logged by Chromium
        await page.locator('#problems').getByRole('link', { name: 'Escalation step 1, after' }).click();
        assert.equal(await page.evaluate(() => document.activeElement?.id), 'e0-after');
        assert.deepEqual(await violations(opened), []);
      } finally {
        await opened.close();
      }
    });
  }

  test('reminders and an escalation step, filled in by label, are saved', async () => {
    const opened = await signedIn(1280);
    try {
      const { page } = opened;
      await page.goto('/app/admin/rules?new');
      await page.getByLabel('Name', { exact: true }).fill('Payments');
      await page.getByLabel(/^Tool/).fill('pay.*');
      await page.getByLabel('Effect').selectOption('approval');
      await page.getByLabel(/^Remind before the deadline/).fill('30m, 5m');
      const step = page.getByRole('group', { name: 'Step 1' });
      await step.getByLabel(/^After/).fill('15m');
      await step.getByLabel(/^Add approvers/).selectOption(['group:oncall']);
      await page.getByLabel('May be approved in bulk').selectOption('false');
      await page.getByLabel(/lasts/).fill('45');
      await page.getByRole('button', { name: 'Save rule' }).click();
      await page.waitForURL('**/app/admin/rules');
      const rule = (await exportConfig(t.service.ctx, workspace)).rules?.find((r) => r.name === 'Payments');
      assert.deepEqual(rule, {
        name: 'Payments',
        tool: 'pay.*',
        effect: 'approval',
        remind: { before: ['30m', '5m'] },
        escalate: [{ after: '15m', to: ['group:oncall'] }],
        bulk: false,
        claim: { minutes: 45 },
      });
      assert.deepEqual(opened.errors, []);
    } finally {
      await opened.close();
    }
  });

  for (const [width, name] of [
    [1280, 'desktop'],
    [390, 'phone'],
  ] as const) {
    test(`at ${width} px a rule using every field shows each in its form, and its preview`, async () => {
      t.clock.advance(60_000); // sign-in links share a per-address quota
      const config = await t.workspace({ config: EVERY_FIELD });
      await seedHolds(t.service.ctx, config.workspace, 5, (i) => ({
        toolName: i % 2 ? 'payments.refund' : 'payments.send',
        agent: { id: 'agent-7', label: null },
        arguments: { amount: 900 + i * 400, currency: 'EUR', payee: 'Globex' },
      }));
      const opened = await openPage(browser, { baseURL: t.url, width });
      try {
        const { page } = opened;
        await page.goto((await inviteLink(t.service.ctx, config.workspace, 'admin@acme.test')).url);
        await page.getByRole('button', { name: 'Continue to approvals' }).click();
        await page.waitForURL('**/app/inbox');
        await page.goto(`/app/admin/rules/${encodeURIComponent('Large payments need two approvers')}`);
        assert.equal(await page.getByLabel(/^Remind before the deadline/).inputValue(), '1h, 15m');
        assert.equal(await page.getByLabel(/^Remind every/).inputValue(), '30m');
        const step = page.getByRole('group', { name: 'Step 1' });
        assert.equal(await step.getByLabel(/^After/).inputValue(), '2h');
        assert.deepEqual(await step.getByLabel(/^Add approvers/).evaluate(chosen), ['group:oncall']);
        assert.equal(await page.getByLabel(/^Passkey signature/).inputValue(), 'true');
        assert.equal(await page.getByLabel(/^May be approved in bulk/).inputValue(), 'false');
        assert.equal(await page.getByLabel(/lasts/).inputValue(), '45');
        assert.equal(await page.getByLabel(/^A claim halts escalation/).inputValue(), 'true');

        await page.getByLabel(/^Approvals required/).fill('1');
        await page.getByRole('button', { name: 'Preview on the last 30 days' }).click();
        await page.getByRole('heading', { name: /^Preview/ }).waitFor();
        assert.match(await page.locator('main').innerText(), /Replayed 5 holds/);
        if (process.env.SCREENSHOTS_DIR)
          await page.screenshot({ path: `${process.env.SCREENSHOTS_DIR}/rules-${name}.png`, fullPage: true });
        assert.deepEqual(opened.errors, []);
      } finally {
        await opened.close();
      }
    });
  }
});
