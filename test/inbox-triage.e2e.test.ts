/**
 * Triage in Chromium at a desk's width (1280 px, mouse and keys) and a phone's (390 px, by touch), as
 * issue 39 asks of every point: lines selected by their boxes, bulk approval and rejection through
 * the confirmation (its total, then each hold decided), claiming and releasing a hold from the list and
 * from its page, and the layout: the header (its menu folded on a phone), the filters folded and
 * unfolding, and the hold's decision bar showing the deciding values, in view wherever one scrolls.
 * SQLite is enough: what is checked is the page and its script (test/bulk-decisions.test.ts and
 * test/claims.test.ts decide on both backends).
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Browser, Locator, Page } from 'playwright-core';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, type TestPage } from './support/browser.ts';
import { seedPayments, signedInToInbox } from './support/inbox-browser.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
tools:
  - { connection: SDK, tool: pay, classification: approval }
`;

const PHONE = 390;

describe('triage in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  let browser: Browser;
  let t: TestService;
  const pages: TestPage[] = [];

  before(async () => {
    browser = await launchBrowser();
    t = await startTestService(sqlite);
  });
  after(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await closeBrowser(browser);
    await t?.close();
  });
  // Sign-in links share a per-IP quota: a new window each test.
  beforeEach(() => t.clock.advance(60_000));

  async function signIn(workspace: Workspace, width: number): Promise<Page> {
    const opened = await signedInToInbox(browser, t, workspace, { width });
    pages.push(opened);
    return opened.page;
  }

  const payments = (workspace: Workspace, count: number) => seedPayments(t, workspace, count);

  const statusOf = async (workspace: Workspace, id: string) =>
    (await t.service.ctx.db.one<{ status: string }>(
      'SELECT status FROM holds WHERE id = $1 AND workspace_id = $2',
      [id, workspace.id],
    ))!.status;

  /** A tap on a phone, a click at a desk. */
  const press = (target: Locator, width: number) => (width === PHONE ? target.tap() : target.click());

  for (const width of [1280, PHONE]) {
    test(`at ${width} px, lines are selected by their boxes; the bulk bar counts them`, async () => {
      const { workspace } = await t.workspace({ config: WORKSPACE });
      const ids = await payments(workspace, 8);
      const page = await signIn(workspace, width);
      const bar = page.locator('form#bulk');
      const approve = bar.getByRole('button', { name: 'Approve selected…' });
      assert.equal(await approve.isDisabled(), true, 'nothing selected: nothing to decide');
      const box = page.locator(`#line-${ids[1]} input.pick`);
      const { width: side, height } = (await box.boundingBox())!;
      assert.ok(side >= 24 && height >= 24, `a target of ${side}×${height} px`);

      await press(box, width);
      await bar.getByText('1 selected').waitFor();
      await press(page.locator(`#line-${ids[4]} input.pick`), width);
      await bar.getByText('2 selected').waitFor();
      await press(box, width);
      await bar.getByText('1 selected').waitFor();
      assert.equal(await approve.isDisabled(), false);
      if (width === PHONE) return;

      // At a desk, x toggles the focused line and shift-click selects a range.
      await page.locator(`#line-${ids[1]} > a`).focus();
      await page.keyboard.press('x');
      await bar.getByText('2 selected').waitFor();
      await page.locator(`#line-${ids[1]} input.pick`).click();
      await page.locator(`#line-${ids[5]} input.pick`).click({ modifiers: ['Shift'] });
      await bar.getByText('5 selected').waitFor();
      // Keys work from a line's box too (it is no text field): x there unselects its line.
      await page.keyboard.press('x');
      await bar.getByText('4 selected').waitFor();
      await page.keyboard.press('x');
      const picked = await page
        .locator('input.pick:checked')
        .evaluateAll((boxes) => boxes.map((b) => (b as HTMLInputElement).value));
      assert.deepEqual(picked, ids.slice(1, 6));
    });

    for (const verdict of ['approve', 'reject'] as const) {
      test(`at ${width} px, a bulk ${verdict} goes through its confirmation, then decides each hold`, async () => {
        const { workspace } = await t.workspace({ config: WORKSPACE });
        const ids = await payments(workspace, 5);
        const page = await signIn(workspace, width);
        for (const id of ids.slice(0, 3)) await press(page.locator(`#line-${id} input.pick`), width);
        await page.locator('form#bulk').getByText('3 selected').waitFor();
        const verb = verdict === 'approve' ? 'Approve' : 'Reject';
        await press(page.getByRole('button', { name: `${verb} selected…` }), width);

        await page.waitForURL('**/app/inbox/bulk');
        await page.getByRole('heading', { name: `${verb} 3 holds?` }).waitFor();
        const confirmation = await page.locator('.bulk-confirm').innerText();
        assert.match(confirmation, /Total: 3 holds · 3,603 EUR/);
        for (const i of [0, 1, 2])
          assert.match(confirmation, new RegExp(`amount=${1200 + i}.*Supplier ${i}`));
        assert.doesNotMatch(confirmation, /Supplier 3/);
        assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth));
        for (const id of ids) assert.equal(await statusOf(workspace, id), 'pending', 'nothing decided yet');

        await page.getByLabel('Comment (optional, on each decision)').fill('Month-end run');
        await press(page.getByRole('button', { name: `${verb} 3 holds` }), width);
        await page.waitForURL('**/app/inbox');
        const notice = verdict === 'approve' ? 'Your approval is recorded on 3 holds.' : 'Rejected 3 holds.';
        await page.locator('p.notice[role=status]', { hasText: notice }).waitFor();
        const decided = verdict === 'approve' ? 'approved' : 'rejected';
        for (const id of ids.slice(0, 3)) assert.equal(await statusOf(workspace, id), decided);
        for (const id of ids.slice(3)) assert.equal(await statusOf(workspace, id), 'pending');
        assert.equal(await page.locator('ol.lines > li').count(), 2);
      });
    }

    test(`at ${width} px, a hold is claimed and released from the list and from its page`, async () => {
      const { workspace } = await t.workspace({ config: WORKSPACE });
      const ids = await payments(workspace, 3);
      const page = await signIn(workspace, width);
      const claimedLine = page.locator(`#line-${ids[2]}[data-claimed-by="Ada Admin"]`, {
        hasText: 'Ada Admin is on it',
      });
      if (width === PHONE) {
        // A phone shows the line's hold on its own, with its I'm on it; back to the list, the line says so.
        await page.locator(`#line-${ids[2]} > a`).tap();
        await page.waitForURL(new RegExp(`hold=${ids[2]}`));
        await page.locator(`#hold-${ids[2]}`).getByRole('button', { name: "I'm on it" }).tap();
        await page.locator(`#hold-${ids[2]} .claimed`, { hasText: 'You are on it until' }).waitFor();
        await page.getByRole('link', { name: '← All waiting holds' }).tap();
        await claimedLine.waitFor();
        await page.locator(`#line-${ids[2]} > a`).tap();
        await page.locator(`#hold-${ids[2]}`).getByRole('button', { name: 'Release' }).tap();
        await page.locator(`#hold-${ids[2]}`).getByRole('button', { name: "I'm on it" }).waitFor();
      } else {
        await page.locator(`#line-${ids[2]} > a`).focus();
        await page.keyboard.press('m');
        await claimedLine.waitFor();
        await page.locator('#key-status', { hasText: /Ada Admin is on it: pay · .*Supplier 2/ }).waitFor();
      }

      await page.goto(`/app/holds/${ids[1]}`);
      await press(page.getByRole('button', { name: "I'm on it" }), width);
      await page.locator(`#hold-${ids[1]} .claimed`, { hasText: 'You are on it until' }).waitFor();
      await press(page.getByRole('button', { name: 'Release' }), width);
      await page.getByRole('button', { name: "I'm on it" }).waitFor();
    });

    test(`at ${width} px: the header and its menu, the filters, and a hold's decision bar in view`, async () => {
      const { workspace } = await t.workspace({ config: WORKSPACE });
      const ids = await payments(workspace, 12);
      const page = await signIn(workspace, width);
      const header = (await page.locator('header.top').boundingBox())!;
      const history = page.locator('header.top').getByRole('link', { name: 'History' });
      const search = page.getByRole('searchbox');
      if (width === PHONE) {
        assert.ok(header.height < 70, `the header is one row (${header.height} px)`);
        assert.equal(await history.isVisible(), false, 'the menu is folded');
        await press(page.getByText('Menu', { exact: true }), width);
        await history.waitFor();
        await press(page.getByText('Menu', { exact: true }), width);
        await history.waitFor({ state: 'hidden' });
        // The filters fold away behind their summary, and unfold.
        assert.equal(await search.isVisible(), false, 'the filters are folded');
        await press(page.getByText('Search and filters', { exact: true }), width);
        await search.waitFor();
        assert.equal(await page.locator('details.more-filters').getAttribute('open'), null);
      } else {
        assert.equal(await history.isVisible(), true, 'the navigation is shown');
        assert.ok(header.height < 100, `the header is two rows at most (${header.height} px)`);
        assert.equal(await search.isVisible(), true, 'the filters are shown');
        // On a tablet the navigation folds behind Menu too.
        await page.setViewportSize({ width: 900, height: 900 });
        const narrower = (await page.locator('header.top').boundingBox())!;
        assert.ok(narrower.height < 70, `the header is one row at 900 px (${narrower.height} px)`);
        await page.setViewportSize({ width, height: 900 });
      }
      await page.locator('details.more-filters > summary').click();
      await page.getByLabel(/^Agent/).waitFor();

      // A hold long enough to scroll: its decision bar names the deciding values; on a phone it stays in
      // view (fixed to the bottom) at the top of the page and at its end.
      const [long] = await seedHolds(t.service.ctx, workspace, 1, () => ({
        toolName: 'pay',
        arguments: {
          amount: 4200,
          currency: 'EUR',
          payee: 'Globex',
          lines: Array.from({ length: 60 }, (_, i) => `Line ${i}`),
        },
      }));
      for (const [id, values] of [
        [ids[3]!, /1,203 EUR · Supplier 3/],
        [long!, /4,200 EUR · Globex/],
      ] as const) {
        await page.goto(`/app/holds/${id}`);
        const decisionBar = page.locator(`#hold-${id} .decision-bar`);
        assert.match(await decisionBar.innerText(), values);
        if (width !== PHONE) continue;
        for (const scroll of ['top', 'end']) {
          if (scroll === 'end') await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
          const box = (await decisionBar.boundingBox())!;
          assert.ok(
            box.y >= 0 && box.y + box.height <= 900,
            `in view at the ${scroll}: ${JSON.stringify(box)}`,
          );
        }
      }
      if (width === PHONE) assert.ok(await page.evaluate(() => window.scrollY > 0), 'the long hold scrolled');
    });
  }
});
