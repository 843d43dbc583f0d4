/**
 * The History page in headless Chromium with 1,200 decided holds, on both backends: readable at 1280 and
 * 390 px (screenshots in /tmp, for docs/screenshots), no serious accessibility violation, and filters,
 * page jumps and the CSV working without JavaScript. The CSV of them all crosses its batches of 1,000.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { decideHold } from '../src/services/decide-hold.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage } from './support/browser.ts';
import { parseCsv } from './support/csv.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Lovelace, role: admin }
  - { email: grace@acme.test, name: Grace Hopper, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: drop_table, classification: deny }
`;
const HOLDS = 1200;
const TOOLS = ['payments.refund', 'send_invoice', 'crm.update_contact', 'read_balance', 'drop_table'];
const AGENTS = [
  { id: 'billing-bot', label: 'Billing bot' },
  { id: 'support-agent-7', label: 'Support agent' },
  { id: 'crm-sync', label: null },
];
const COMMENTS = [
  'Matches the invoice in the ledger.',
  'Customer confirmed by phone; refund within the 30-day window, approved as agreed with finance.',
  'Not this quarter.',
];

for (const backend of backends) {
  describe(
    `history in Chromium on ${backend.name}`,
    { skip: browserSkip ?? backend.skip, timeout: 600_000 },
    () => {
      let browser: Browser;
      let t: TestService;
      let workspace: Workspace;

      before(async () => {
        [browser, t] = await Promise.all([launchBrowser(), startTestService(backend)]);
        ({ workspace } = await t.workspace({ config: WORKSPACE }));
        const { ctx } = t.service;
        const ids = await seedHolds(ctx, workspace, HOLDS, (i) => ({
          toolName: TOOLS[i % TOOLS.length]!,
          agent: AGENTS[i % AGENTS.length]!,
          arguments: { amount: (i * 37) % 5000, currency: 'EUR', reference: `INV-${2026_0000 + i}` },
        }));
        const members = await Promise.all(
          ['admin@acme.test', 'grace@acme.test'].map(
            async (email) => (await findMemberByEmail(ctx.db, workspace.id, email))!,
          ),
        );
        const start = Date.now() - 30 * 86_400_000;
        for (const [i, id] of ids.entries()) {
          await ctx.db.run('UPDATE holds SET created_at = $1 WHERE id = $2', [start + i * 2_000_000, id]);
          const tool = TOOLS[i % TOOLS.length]!;
          if (tool === 'read_balance' || tool === 'drop_table' || i % 50 === 7) continue;
          if (i % 50 === 11) {
            await ctx.db.run('UPDATE holds SET expires_at = $1 WHERE id = $2', [Date.now() - 1000, id]);
            continue;
          }
          await decideHold(ctx, {
            workspaceId: workspace.id,
            holdId: id,
            memberId: members[i % 5 < 2 ? 1 : 0]!.id,
            verdict: i % 9 === 0 ? 'reject' : 'approve',
            comment: i % 4 === 0 ? COMMENTS[i % COMMENTS.length] : null,
            channel: i % 3 === 0 ? 'email' : 'inbox',
          });
        }
        await t.settled();
      });
      after(async () => {
        await closeBrowser(browser);
        await t?.close();
      });

      async function signIn(page: Page) {
        const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
        await page.goto(url);
        await page.getByRole('button', { name: 'Continue to approvals' }).click();
        await page.waitForURL('**/app/inbox');
      }

      for (const width of [1280, 390]) {
        test(`readable at ${width} px, with totals, page jumps and no serious violation`, async () => {
          const opened = await openPage(browser, {
            baseURL: t.url,
            width,
            height: width === 390 ? 1400 : 900,
          });
          try {
            await signIn(opened.page);
            await opened.page.goto('/app/history');
            const totals = opened.page.locator('.history-totals');
            await assert.doesNotReject(
              totals.getByText(`1–50 of ${HOLDS.toLocaleString('en-US')}`).waitFor(),
            );
            assert.equal(await opened.page.locator('table.history tbody tr').count(), 50);
            const overflow = await opened.page.evaluate(
              () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
            );
            assert.equal(overflow, 0, 'the page does not scroll sideways');
            if (width === 390) {
              // Cards: each value beside its label, the header row hidden.
              assert.equal(await opened.page.locator('table.history thead').isVisible(), false);
              const cell = opened.page
                .locator('table.history tbody tr')
                .first()
                .locator('td[data-label="Decided by"]');
              assert.equal(await cell.evaluate((td) => getComputedStyle(td).display), 'grid');
            }
            const result = await new AxeBuilder({ page: opened.page })
              .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'])
              .analyze();
            const serious = result.violations.filter(
              (v) => v.impact === 'serious' || v.impact === 'critical',
            );
            assert.deepEqual(
              serious.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`),
              [],
            );
            await opened.page.screenshot({ path: `/tmp/history-${backend.name}-${width}.png` });
            // The end of the page: the last rows and the page jumps.
            await opened.page.getByRole('navigation', { name: 'History pages' }).scrollIntoViewIfNeeded();
            await opened.page.screenshot({ path: `/tmp/history-${backend.name}-${width}-end.png` });
            assert.deepEqual(opened.errors, []);
          } finally {
            await opened.close();
          }
        });
      }

      test('filters, page jumps and the CSV work without JavaScript', async () => {
        const context = await browser.newContext({
          javaScriptEnabled: false,
          baseURL: t.url,
          acceptDownloads: true,
        });
        try {
          const page = await context.newPage();
          await signIn(page);
          await page.goto('/app/history');
          await page.getByLabel('Decided by').fill('GRACE');
          await page.getByLabel('Text').fill('eur');
          await page.getByRole('button', { name: 'Filter' }).click();
          await page.waitForURL(/decided_by=GRACE/);
          const filtered = await page.locator('.history-totals strong').first().textContent();
          const total = Number(filtered!.split(' of ')[1]!.replace(/,/g, ''));
          assert.ok(total > 50 && total < HOLDS, filtered!);
          for (const cell of await page.locator('td[data-label="Decided by"]').allTextContents())
            assert.match(cell, /Grace Hopper/);
          await page
            .getByRole('navigation', { name: 'History pages' })
            .getByRole('link', { name: 'Last »' })
            .click();
          await page.waitForURL(/page=/);
          assert.match(
            (await page.locator('.history-totals strong').first().textContent())!,
            new RegExp(`of ${total}$`),
          );
          const download = page.waitForEvent('download');
          await page.getByRole('link', { name: 'Download CSV' }).click();
          const file = await download;
          const rows = parseCsv(
            await new Response((await file.createReadStream()) as unknown as ReadableStream).text(),
          );
          assert.equal(rows.length - 1, total, 'the CSV has every matching hold');
        } finally {
          await context.close();
        }
        // Every hold, past the CSV's batches of 1,000.
        const session = await appClient(t).signIn(workspace, 'admin@acme.test');
        const all = parseCsv((await appClient(t).get(session, '/app/history.csv')).text);
        assert.equal(all.length - 1, HOLDS);
        assert.equal(new Set(all.slice(1).map((row) => row[0])).size, HOLDS);
      });
    },
  );
}
