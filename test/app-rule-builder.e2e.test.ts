/**
 * The rule builder in Chromium, wide (1280 px) and narrow (390 px): no operator's label is cut in its
 * select, axe-core finds nothing serious in the form nor in a refused one, and reminders and escalation
 * steps are filled in and saved by label, as a person would.
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
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: olga@acme.test, name: Olga Oncall, role: approver }
groups:
  oncall: [olga@acme.test]
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
});
