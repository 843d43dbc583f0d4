/**
 * The inbox's keyboard in a real browser (headless Chromium): keys act on the focused line without
 * loading a page, `/` searches, `j` pages on past the last line, shortcuts can be turned off, and a
 * typed comment survives showing new holds. Selection, bulk decisions, claims and the phone layout are
 * in test/inbox-triage.e2e.test.ts. SQLite is enough: what is checked is the page and its script.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
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
  - { connection: SDK, tool: urgent_pay, classification: approval }
  - { connection: SDK, tool: signed_pay, classification: approval }
rules:
  - { name: Urgent payments, tool: urgent_pay, effect: approval, timeout_minutes: 5 }
  - { name: Signed payments, tool: signed_pay, effect: approval, signed: true }
`;

describe('the inbox keyboard in a browser', { skip: browserSkip, concurrency: 1 }, () => {
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

  async function signIn(workspace: Workspace): Promise<Page> {
    const opened = await signedInToInbox(browser, t, workspace);
    pages.push(opened);
    return opened.page;
  }

  const payments = (workspace: Workspace, count: number) => seedPayments(t, workspace, count);

  const statusOf = async (workspace: Workspace, id: string) =>
    (await t.service.ctx.db.one<{ status: string }>(
      'SELECT status FROM holds WHERE id = $1 AND workspace_id = $2',
      [id, workspace.id],
    ))!.status;

  const focusedHold = (page: Page) =>
    page.evaluate(() => document.activeElement?.closest('li')?.dataset.hold ?? null);

  /** A mark on the window: it survives only while no other page is loaded in the tab. */
  const mark = (page: Page) => page.evaluate(() => Object.assign(window, { keysTestMark: true }));
  const stillSamePage = (page: Page) => page.evaluate(() => 'keysTestMark' in window);

  test('a and r decide the focused line, not the open hold, in place; focus moves on, counts follow', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const ids = await payments(workspace, 6);
    const page = await signIn(workspace);
    await mark(page);
    // The first hold is open beside the list; the focus goes to the fourth line.
    await page.locator(`#hold-${ids[0]}`).waitFor();
    for (let i = 0; i < 3; i++) await page.keyboard.press('j');
    assert.equal(await focusedHold(page), ids[3]);

    await page.keyboard.press('a');
    const dialog = page.getByRole('dialog', { name: 'Approve this action?' });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /pay · .*Supplier 3/, 'the dialog names the focused line');
    assert.doesNotMatch(await dialog.innerText(), /Supplier 0/);
    await page.keyboard.press('Enter');
    await page.locator(`#line-${ids[3]}`).waitFor({ state: 'detached' });
    await page.locator('#key-status', { hasText: 'Approved.' }).waitFor();
    assert.equal(await statusOf(workspace, ids[3]!), 'approved');
    assert.equal(await statusOf(workspace, ids[0]!), 'pending', 'the open hold is not decided');
    assert.equal(await focusedHold(page), ids[4], 'the focus moves to the next line');
    await page.locator('#pending-count', { hasText: /^5$/ }).waitFor();
    assert.equal(await stillSamePage(page), true, 'no page was loaded');

    // r on the next line, then the open hold decided with its comment when no line has the focus.
    await page.keyboard.press('r');
    await page.getByRole('dialog', { name: 'Reject this action?' }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator(`#line-${ids[4]}`).waitFor({ state: 'detached' });
    assert.equal(await statusOf(workspace, ids[4]!), 'rejected');
    await page.locator(`#hold-${ids[0]} textarea`).fill('Checked the invoice');
    await page.evaluate(() => (document.activeElement as HTMLElement).blur());
    await page.keyboard.press('a');
    assert.match(await page.getByRole('dialog', { name: 'Approve this action?' }).innerText(), /Supplier 0/);
    await page.keyboard.press('Enter');
    await page.locator(`#hold-${ids[0]}.left`).waitFor();
    assert.equal(await statusOf(workspace, ids[0]!), 'approved');
    const { reason } = (await t.service.ctx.db.one<{ reason: string }>(
      'SELECT reason FROM holds WHERE id = $1',
      [ids[0]],
    ))!;
    assert.equal(reason, 'Checked the invoice');
    assert.equal(await stillSamePage(page), true, 'still no page was loaded');
  });

  test('a on a hold whose approval must be signed with a passkey opens its page, deciding nothing', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    await payments(workspace, 1);
    const [signed] = await seedHolds(t.service.ctx, workspace, 1, () => ({
      toolName: 'signed_pay',
      arguments: { amount: 5000, currency: 'EUR' },
    }));
    const page = await signIn(workspace);
    await page.locator(`#line-${signed} > a`).focus();
    await page.keyboard.press('a');
    await page.getByRole('dialog', { name: 'Approve this action?' }).waitFor();
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`/app/holds/${signed}$`));
    await page.getByText('This approval must be signed with your passkey').waitFor();
    assert.equal(await statusOf(workspace, signed!), 'pending');
  });

  test('a on a line that cannot show its action whole opens the hold instead of approving it', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const [first] = await payments(workspace, 1);
    const [long] = await seedHolds(t.service.ctx, workspace, 1, () => ({
      toolName: 'pay',
      arguments: { amount: 9000, currency: 'EUR', memo: 'x'.repeat(300), iban: 'DE89370400440532013000' },
    }));
    const page = await signIn(workspace);
    await page.locator(`#hold-${first}`).waitFor();
    assert.equal(await page.locator(`#line-${long}`).getAttribute('data-complete'), null);
    await page.locator(`#line-${long} > a`).focus();
    await page.keyboard.press('a');
    await page.waitForURL(new RegExp(`hold=${long}`));
    await page.locator(`#hold-${long}`).waitFor();
    assert.equal(await page.getByRole('dialog', { name: 'Approve this action?' }).isVisible(), false);
    assert.equal(await statusOf(workspace, long!), 'pending', 'nothing approved unseen');
  });

  test('j past the end of a page where holds were decided in place skips none of those that moved up', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const ids = await payments(workspace, 53);
    const page = await signIn(workspace);
    for (const id of [ids[0], ids[1]]) {
      await page.locator(`#line-${id} > a`).focus();
      await page.keyboard.press('r');
      await page.getByRole('dialog', { name: 'Reject this action?' }).waitFor();
      await page.keyboard.press('Enter');
      await page.locator(`#line-${id}`).waitFor({ state: 'detached' });
    }
    // ids[50] and ids[51] moved up onto page 1 on the server; the next page now starts at ids[52].
    await page.locator(`#line-${ids[49]} > a`).focus();
    await page.keyboard.press('j');
    await page.waitForFunction((id) => document.activeElement?.closest('li')?.dataset.hold === id, ids[50]);
    assert.doesNotMatch(page.url(), /page=2/);
  });

  test('/ searches; j past the last line opens the next page on its first line; shortcuts turn off; c comments', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const ids = await payments(workspace, 52);
    const page = await signIn(workspace);

    await page.keyboard.press('/');
    assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('type')), 'search');
    await page.keyboard.type('jk');
    assert.equal(
      await page.locator('.filters input[type="search"]').inputValue(),
      'jk',
      'no key fires while typing',
    );
    await page.locator('.filters input[type="search"]').fill('');

    const firstPage = page.url();
    await page.locator(`#line-${ids[49]} > a`).focus();
    await page.keyboard.press('j');
    await page.waitForURL((url) => url.href !== firstPage);
    await page.locator(`#line-${ids[50]}`).waitFor();
    await page.waitForFunction((id) => document.activeElement?.closest('li')?.dataset.hold === id, ids[50]);
    const secondPage = page.url();
    await page.keyboard.press('k');
    await page.waitForURL((url) => url.href !== secondPage);
    await page.waitForFunction((id) => document.activeElement?.closest('li')?.dataset.hold === id, ids[49]);

    // Off in the keys dialog: no key acts, and it stays off on the next page; the button turns them on.
    await page.keyboard.press('?');
    const keys = page.getByRole('dialog', { name: 'Keyboard' });
    await keys.getByLabel('Keyboard shortcuts on').uncheck();
    await keys.getByRole('button', { name: 'Close' }).click();
    await page.keyboard.press('k');
    assert.equal(await focusedHold(page), ids[49], 'k does nothing');
    await page.reload();
    await page.locator(`#line-${ids[49]} > a`).focus();
    await page.keyboard.press('?');
    await page.keyboard.press('a');
    assert.equal(await page.locator('dialog[open]').count(), 0, 'neither ? nor a opens anything');
    await page.getByRole('button', { name: 'Keyboard: ?' }).click();
    assert.equal(await keys.getByLabel('Keyboard shortcuts on').isChecked(), false);
    await keys.getByLabel('Keyboard shortcuts on').check();
    await keys.getByRole('button', { name: 'Close' }).click();
    await page.locator(`#line-${ids[49]} > a`).focus();
    await page.keyboard.press('k');
    assert.equal(await focusedHold(page), ids[48]);

    // c on a line not open opens it, in its comment box.
    await page.keyboard.press('c');
    await page.waitForURL(new RegExp(`hold=${ids[48]}`));
    await page.waitForFunction((id) => document.activeElement?.id === `comment-${id}`, ids[48]);
  });

  test('a comment typed stays when new holds are shown; the bar says one is due sooner', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const [, second] = await payments(workspace, 2);
    const page = await signIn(workspace);
    await page.goto(`${t.url}/app/inbox?hold=${second}`);
    await page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
    await page.locator(`#hold-${second} textarea`).fill('Half written');

    await seedHolds(t.service.ctx, workspace, 1, () => ({
      toolName: 'urgent_pay',
      arguments: { amount: 12 },
    }));
    const show = page.getByRole('link', { name: '1 new hold, due sooner than anything listed: show' });
    await show.click();
    await page.locator('ol.lines > li').nth(2).waitFor();
    assert.equal(await page.locator(`#hold-${second} textarea`).inputValue(), 'Half written');
  });
});
