/**
 * The approver's desk in a real browser (headless Chromium): a list of a thousand holds worked from
 * the keyboard, live updates that never move what is under the pointer, holds decided elsewhere
 * marked in place, and a queue of 240 holds of 1 MB each. SQLite is enough here: the inbox's queries
 * run on both backends in test/inbox.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { seedHolds } from './support/seed.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: sam@acme.test, name: Sam Second, role: admin }
tools:
  - { connection: SDK, tool: pay, classification: approval }
  - { connection: SDK, tool: upload, classification: approval }
  - { connection: SDK, tool: urgent_pay, classification: approval }
rules:
  - { name: Urgent payments, tool: urgent_pay, effect: approval, timeout_minutes: 5 }
`;

describe('the inbox in a browser', { skip: browserSkip, concurrency: 1 }, () => {
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

  async function signIn(workspace: Workspace, email: string, width = 1280): Promise<Page> {
    const opened = await openPage(browser, { width, height: 900 });
    pages.push(opened);
    const { url } = await inviteLink(t.service.ctx, workspace, email);
    await opened.page.goto(url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
    await opened.page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
    return opened.page;
  }

  /** Payments one second apart: the deadline order is the order of submission. */
  const payments = (workspace: Workspace, count: number) =>
    seedHolds(t.service.ctx, workspace, count, (i) => {
      t.clock.advance(1_000);
      return { toolName: 'pay', arguments: { amount: 100 + i, currency: 'EUR', payee: `Supplier ${i}` } };
    });

  const statusOf = async (workspace: Workspace, id: string) =>
    (await t.service.ctx.db.one<{ status: string }>(
      'SELECT status FROM holds WHERE id = $1 AND workspace_id = $2',
      [id, workspace.id],
    ))!.status;

  test('keyboard only: the third hold of a thousand is approved with j, j, Enter, a and a confirmation', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const ids = await payments(workspace, 1000);
    const page = await signIn(workspace, 'admin@acme.test');
    assert.equal(await page.locator('#pending-count').innerText(), '1000');
    assert.equal(await page.locator('ol.lines > li').count(), 50, 'one page of the list');
    assert.equal(await page.locator('ol.lines > li').first().getAttribute('data-hold'), ids[0]);

    await page.keyboard.press('j');
    await page.keyboard.press('j');
    const focused = () => page.evaluate(() => document.activeElement?.closest('li')?.dataset.hold);
    assert.equal(await focused(), ids[2], 'j moves the focus down the list');
    await page.keyboard.press('k');
    assert.equal(await focused(), ids[1], 'k moves it back up');
    await page.keyboard.press('j');
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`hold=${ids[2]}`));
    await page.locator(`#hold-${ids[2]}`).waitFor();

    await page.keyboard.press('a');
    const dialog = page.getByRole('dialog', { name: 'Approve this action?' });
    await dialog.waitFor();
    assert.match(await dialog.innerText(), /pay · amount=102, currency="EUR", payee="Supplier 2"/);
    assert.match(await dialog.innerText(), /Requested by Billing bot/);
    await page.keyboard.press('Enter');
    // Decided in place: the line leaves the list and the focus goes on to the next one.
    await page.locator(`#line-${ids[2]}`).waitFor({ state: 'detached' });
    await page.locator('#key-status', { hasText: 'Approved.' }).waitFor();
    assert.equal(await focused(), ids[3]);
    assert.equal(await statusOf(workspace, ids[2]!), 'approved');
    for (const other of [ids[0], ids[1], ids[3], ids[999]])
      assert.equal(await statusOf(workspace, other!), 'pending');
    await page.locator('#pending-count', { hasText: /^999$/ }).waitFor();

    // Escape cancels: r asks, and nothing is decided.
    await page.keyboard.press('r');
    await page.getByRole('dialog', { name: 'Reject this action?' }).waitFor();
    await page.keyboard.press('Escape');
    assert.equal(await statusOf(workspace, ids[3]!), 'pending');
    await page.keyboard.press('?');
    await page.getByRole('dialog', { name: 'Keyboard' }).waitFor();
  });

  test('a new hold arriving under a resting pointer leaves the button on the same hold', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const [first, second] = await payments(workspace, 2);
    const page = await signIn(workspace, 'admin@acme.test');
    await page.goto(`${t.url}/app/inbox?hold=${second}`);
    await page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
    const approve = page.locator(`#hold-${second} button[value="approve"]`);
    await approve.hover();
    const box = (await approve.boundingBox())!;
    const underPointer = () =>
      page.evaluate(
        ([x, y]) => {
          const el = document.elementFromPoint(x!, y!);
          return {
            hold: el?.closest('[data-hold]')?.getAttribute('data-hold'),
            value: el?.closest('button')?.value,
          };
        },
        [box.x + box.width / 2, box.y + box.height / 2],
      );
    const lineBox = await page.locator(`#line-${first}`).boundingBox();
    await page.locator(`#hold-${second} textarea`).fill('Looks right to me');

    // Three new holds, one with a deadline sooner than any shown (it sorts first).
    await seedHolds(t.service.ctx, workspace, 3, (i) => ({
      toolName: 'urgent_pay',
      arguments: { amount: 12 + i },
    }));
    await page
      .getByRole('link', { name: '3 new holds, at least one due sooner than anything listed: show' })
      .waitFor();

    assert.deepEqual(await underPointer(), { hold: second, value: 'approve' });
    assert.deepEqual(await page.locator(`#line-${first}`).boundingBox(), lineBox, 'the list did not move');
    assert.equal(await page.locator(`#hold-${second} textarea`).inputValue(), 'Looks right to me');
    assert.equal(await page.locator('ol.lines > li').count(), 2, 'new holds wait behind the bar');
    assert.equal(await page.locator('#pending-count').innerText(), '5');

    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await page.locator('p.notice[role=status]', { hasText: 'Approved.' }).waitFor();
    assert.equal(await statusOf(workspace, second!), 'approved');
    assert.equal(await statusOf(workspace, first!), 'pending');
    const body = await t.service.ctx.db.one<{ reason: string }>('SELECT reason FROM holds WHERE id = $1', [
      second,
    ]);
    assert.equal(body!.reason, 'Looks right to me');
  });

  test('a hold decided elsewhere stays in place, greyed, saying who decided; the comment typed stays', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const [first, second, third] = await payments(workspace, 3);
    const page = await signIn(workspace, 'admin@acme.test');
    await page.goto(`${t.url}/app/inbox?hold=${second}`);
    await page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
    await page.locator(`#hold-${second} textarea`).fill('Half written');
    const boxes = await Promise.all(
      [first, second, third].map((id) => page.locator(`#line-${id}`).boundingBox()),
    );

    await decideAs(t, workspace.id, second!, 'reject', 'sam@acme.test', 'Wrong supplier');
    await page.locator(`#line-${second}.left`).waitFor();
    assert.equal(await page.locator(`#line-${second} .left-note`).innerText(), 'Rejected by Sam Second');
    assert.equal(await page.locator(`#hold-${second} .left-note`).innerText(), 'Rejected by Sam Second');
    assert.equal(await page.locator(`#hold-${second} textarea`).inputValue(), 'Half written');
    assert.equal(await page.locator(`#hold-${second} button[value="approve"]`).isDisabled(), true);
    const after = await Promise.all(
      [first, second, third].map((id) => page.locator(`#line-${id}`).boundingBox()),
    );
    assert.deepEqual(after, boxes, 'nothing moved');
    assert.equal(await page.locator('#pending-count').innerText(), '2');

    // Deciding it anyway (a form sent before the page knew): back where it was, with a notice.
    const csrf = await page.locator(`input[name="_csrf"]`).first().inputValue();
    const answer = await page.context().request.post(`${t.url}/app/holds/${second}/decide`, {
      form: { _csrf: csrf, verdict: 'approve', back: `/app/inbox?hold=${second}` },
      maxRedirects: 0,
    });
    assert.equal(answer.status(), 303);
    assert.equal(answer.headers().location, `/app/inbox?hold=${second}`);
    await page.goto(`${t.url}${answer.headers().location}`);
    await page.getByText('that hold was decided or expired before your answer').waitFor();
    assert.match(await page.locator(`#hold-${second}`).innerText(), /Outcome: Rejected, reject via inbox/);
    assert.equal(await page.locator('#pending-count').innerText(), '2');
    // A page that could not count (a URL not understood) still shows the count: the script asks.
    await page.goto(`${t.url}/app/inbox?order=sideways`);
    await page.locator('#pending-count', { hasText: /^2$/ }).waitFor();
  });

  test('240 pending holds of 1 MB each: the inbox answers 200 with a small page, and /healthz is not held up', async () => {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const attachment = 'x'.repeat(1_000_000);
    const ids = await seedHolds(t.service.ctx, workspace, 240, (i) => ({
      toolName: 'upload',
      arguments: { amount: 321 + i, currency: 'EUR', attachment },
    }));
    const page = await signIn(workspace, 'admin@acme.test');
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');

    // Four inbox loads at once, and the health check asked meanwhile: it answers while they run.
    const inboxes = Array.from({ length: 4 }, () => fetch(`${t.url}/app/inbox`, { headers: { cookie } }));
    const health = await fetch(`${t.url}/healthz`);
    assert.equal(health.status, 200);
    for (const answer of await Promise.all(inboxes)) {
      assert.equal(answer.status, 200);
      const bytes = Buffer.byteLength(await answer.text());
      assert.ok(bytes < 500_000, `the inbox is ${bytes} bytes`);
    }
    await page.reload();
    assert.equal(await page.locator('#pending-count').innerText(), '240');
    assert.match(
      await page.locator(`#line-${ids[0]} .summary`).innerText(),
      /^amount=321, currency="EUR", attachment="x+…"?/,
    );
    // The selected hold shows a bounded part of its arguments and links to the whole.
    const panel = page.locator(`#hold-${ids[0]}`);
    assert.match(await panel.innerText(), /more characters in the full JSON/);
    const download = await page.context().request.get(`${t.url}/app/holds/${ids[0]}/arguments.json`);
    assert.equal(download.status(), 200);
    assert.equal(JSON.parse(await download.text()).attachment.length, 1_000_000);
    const hold = await fetch(`${t.url}/app/holds/${ids[0]}`, { headers: { cookie } });
    assert.ok(Buffer.byteLength(await hold.text()) < 100_000, 'the hold page is bounded too');
    const signedOut = await fetch(`${t.url}/app/holds/${ids[1]}/arguments.json`, { redirect: 'manual' });
    assert.equal(signedOut.status, 303, 'the full JSON needs a session');
  });
});
