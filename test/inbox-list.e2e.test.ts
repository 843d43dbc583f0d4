/**
 * The inbox list in a real browser at a desk's and a phone's width, with an approver's volumes (617
 * payments from 6 agents over 12 tools, each with a long memo before its amount): every line shows
 * its amount and currency, and why it is the reader's. Screenshots go to SCREENSHOTS_DIR when set.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

const TOOLS = Array.from({ length: 12 }, (_, i) => `payments.send_${i}`);
const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
tools:
${TOOLS.map((tool) => `  - { connection: SDK, tool: ${tool}, classification: approval }`).join('\n')}
rules:
  - { name: Large payments, tool: "payments.*", when: [{ arg: amount, op: gt, value: 1000 }], effect: approval }
`;

describe('the inbox list in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;
  const pages: TestPage[] = [];

  before(async () => {
    browser = await launchBrowser();
    t = await startTestService(sqlite);
    ({ workspace } = await t.workspace({ config: WORKSPACE }));
    await seedHolds(t.service.ctx, workspace, 617, (i) => ({
      toolName: TOOLS[i % 12]!,
      agent: { id: `agent-${i % 6}`, label: `Payments agent ${i % 6}` },
      arguments: {
        memo: `Settlement of invoice INV-${20_000 + i} as agreed in the framework contract of 2025, less credit notes`,
        payee: ['Globex Corporation', 'Initech GmbH', 'Umbrella Ltd'][i % 3],
        iban: 'DE89370400440532013000',
        amount: 1_001 + i * 97.25,
        currency: 'EUR',
      },
    }));
  });
  after(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await closeBrowser(browser);
    await t?.close();
  });

  for (const width of [1280, 390]) {
    test(`at ${width} px every line shows its amount and currency, and why it is the reader's`, async () => {
      const opened = await openPage(browser, { width, height: 900 });
      pages.push(opened);
      const { page } = opened;
      await page.goto((await inviteLink(t.service.ctx, workspace, 'admin@acme.test')).url);
      await page.getByRole('button', { name: 'Continue to approvals' }).click();
      await page.waitForURL('**/app/inbox');
      await page.locator('ol.lines > li').first().waitFor();
      assert.match((await page.locator('.queue .range').textContent()) ?? '', /^1–50 of 617$/);
      // The part of each summary up to its currency is inside the summary's box: not cut off.
      const hidden = await page.$$eval('ol.lines .summary', (summaries) =>
        summaries.flatMap((summary) => {
          const text = summary.firstChild!;
          const end = (text.textContent ?? '').indexOf('currency=') + 'currency="EUR"'.length;
          const range = document.createRange();
          range.setStart(text, 0);
          range.setEnd(text, end);
          const shown = range.getBoundingClientRect().right <= summary.getBoundingClientRect().right + 1;
          return shown ? [] : [summary.textContent];
        }),
      );
      assert.deepEqual(hidden, [], 'amounts cut off');
      assert.equal(await page.locator('ol.lines .why').first().textContent(), 'approver of Large payments');
      const box = await page.locator('ol.lines input.pick').first().boundingBox();
      assert.ok(box && box.width >= 24 && box.height >= 24, `pick box ${JSON.stringify(box)}`);
      if (process.env.SCREENSHOTS_DIR)
        await page.screenshot({ path: `${process.env.SCREENSHOTS_DIR}/inbox-list-${width}.png` });
      assert.deepEqual(opened.errors, []);
    });
  }
});
