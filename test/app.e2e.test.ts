/**
 * The app in a real browser (headless Chromium): first run, sign-in by e-mail link, deciding in the
 * inbox with live updates, agent-supplied text as text only, decision links, the keyboard.
 * SQLite is enough here (the storage rules are covered elsewhere on both backends).
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { mintDecisionLink, type LinkChannel } from '../src/services/decision-links.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import {
  assertArgumentsShown,
  browserSkip,
  closeBrowser,
  launchBrowser,
  openPage,
  type TestPage,
} from './support/browser.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: second@acme.test, name: Sam Second, role: admin }
  - { email: bob@acme.test, name: Bob Approver, role: approver }
groups: { finance: [admin@acme.test, second@acme.test] }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
  - { connection: SDK, tool: quick_task, classification: approval }
rules:
  - { name: Two approvers for payments, tool: pay, effect: approval, approvers: ["group:finance"], approvals_required: 2 }
  - { name: Quick tasks, tool: quick_task, effect: approval, timeout_minutes: 1 }
`;

const XSS = [
  '<script>window.__xss=1</script>',
  '<img src=x onerror="window.__xss=1">',
  '"><svg onload=window.__xss=1>',
] as const;

describe('the app in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  let browser: Browser;
  const pages: TestPage[] = [];

  before(async () => {
    browser = await launchBrowser();
  });
  after(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await closeBrowser(browser);
  });

  /** A fresh profile (no cookies); closed with the suite. */
  async function open(options: { width?: number } = {}) {
    const opened = await openPage(browser, options);
    pages.push(opened);
    return opened;
  }

  /** Until the page's live connection (server-sent events) is open. */
  const live = (page: Page) => page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });

  /** Marks the document so a test can tell that the page was not reloaded. */
  async function markDocument(page: Page) {
    await page.evaluate(() => ((window as any).__sameDocument = true));
    return async () => assert.equal(await page.evaluate(() => (window as any).__sameDocument), true);
  }

  describe('first run', () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(sqlite);
    });
    after(() => t?.close());

    test('an empty service sends /app to the setup form; the form creates the workspace and signs in', async () => {
      const { page } = await open();
      await page.goto(`${t.url}/app`);
      assert.equal(new URL(page.url()).pathname, '/app/setup');
      await page.goto(`${t.url}/app/login`);
      assert.equal(new URL(page.url()).pathname, '/app/setup', 'nobody can sign in yet');

      await page.getByLabel('Workspace name').fill('Acme Robotics');
      await page.getByLabel(/Short name/).fill('acme-robotics');
      await page.getByLabel('Your name').fill('Rita Admin');
      await page.getByLabel('Your e-mail').fill('rita@acme.test');
      await page.getByRole('button', { name: 'Create workspace' }).click();
      await page.waitForURL('**/app/inbox');
      await page.getByRole('heading', { name: /Waiting for you/ }).waitFor();
      assert.match(await page.locator('header.top .brand').innerText(), /Acme Robotics/);
      assert.match(await page.locator('header.top .who').innerText(), /Rita Admin · admin/);

      // Set up once: the form is gone, and posting it again creates nothing.
      const other = await open();
      await other.page.goto(`${t.url}/app/setup`);
      assert.equal(new URL(other.page.url()).pathname, '/app/login');
      const again = await fetch(`${t.url}/app/setup`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'name=Evil&slug=evil&admin_name=Eve&admin_email=eve%40evil.test',
        redirect: 'manual',
      });
      assert.equal(again.status, 422);
      assert.equal(again.headers.get('set-cookie'), null);
      const count = await t.service.ctx.db.one<{ n: number }>('SELECT COUNT(*) AS n FROM workspaces');
      assert.equal(Number(count!.n), 1);
    });
  });

  describe('a workspace', () => {
    let t: TestService;
    let smtp: TestSmtp;
    before(async () => {
      smtp = await startSmtp();
      t = await startTestService(sqlite, { env: smtp.env });
    });
    after(async () => {
      await t?.close();
      await smtp?.close();
    });
    // Sign-in forms and decision links share a small per-IP quota (20 a minute): a new window each test.
    beforeEach(() => t.clock.advance(60_000));

    const submit = async (key: string, overrides: Record<string, unknown> = {}) => {
      const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.status, 'pending', answer.text);
      return answer.body.id as string;
    };
    const record = async (key: string, id: string) =>
      (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;

    /** Signs a fresh page in as a member through a one-time invite link, and waits for live updates. */
    async function signIn(opened: TestPage, workspace: Workspace, email: string) {
      const { url } = await inviteLink(t.service.ctx, workspace, email);
      await opened.page.goto(url);
      await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
      await opened.page.waitForURL('**/app/inbox');
      await live(opened.page);
    }

    async function signInPage(workspace: Workspace, email: string) {
      const opened = await open();
      await signIn(opened, workspace, email);
      return opened;
    }

    async function link(workspace: Workspace, holdId: string, email: string, channel: LinkChannel) {
      const ctx = t.service.ctx;
      const hold = (await findHold(ctx.db, workspace.id, holdId))!;
      const member = (await findMemberByEmail(ctx.db, workspace.id, email))!;
      return mintDecisionLink(ctx, { hold, memberId: member.id, channel });
    }

    test('sign in by e-mail link: same answer for unknown addresses, the link works once', async () => {
      await t.workspace({
        config: 'name: Acme\nmembers:\n  - { email: dana@acme.test, name: Dana Approver, role: approver }\n',
      });
      const { page } = await open();
      const ask = async (email: string) => {
        await page.goto(`${t.url}/app/login`);
        await page.getByLabel('E-mail').fill(email);
        await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
        await page.locator('main .notice').waitFor();
        return page.locator('main').innerText();
      };
      const unknown = await ask('nobody@acme.test');
      const known = await ask('Dana@Acme.test');
      assert.equal(known, unknown, 'the page does not tell whether an address is a member');
      assert.match(known, /If this address belongs to a member/);

      const mail = await smtp.next('dana@acme.test');
      assert.equal(smtp.messagesTo('nobody@acme.test').length, 0, 'no mail for an unknown address');
      assert.equal(mail.subject, 'Your sign-in link');
      const url = mail.links.find((l) => l.includes('/app/login/')) ?? '';
      assert.ok(url.startsWith(`${t.url}/app/login/`), mail.body);

      // Opening the link (as a mail scanner would) does not use it up: it shows a button.
      await page.goto(url);
      await page.reload();
      await page.getByRole('button', { name: 'Continue to approvals' }).click();
      await page.waitForURL('**/app/inbox');
      assert.match(await page.locator('header.top .who').innerText(), /Dana Approver · approver/);
      assert.match(await page.locator('header.top .brand').innerText(), /Acme/);

      // Used once: refused in another browser, by GET and by POST.
      const other = await open();
      const second = await other.page.goto(url);
      assert.equal(second?.status(), 410);
      await other.page.getByRole('heading', { name: 'Link used or expired' }).waitFor();
      assert.equal(await other.page.getByRole('button', { name: 'Continue to approvals' }).count(), 0);
      const post = await other.context.request.post(url, { form: {}, maxRedirects: 0 });
      assert.equal(post.status(), 410);
      assert.equal(post.headers()['set-cookie'], undefined);
      assert.equal((await other.context.cookies()).length, 0);
    });

    test('the inbox lists waiting holds, announces new ones live, and approving with a comment decides', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const first = await submit(key, {
        tool_name: 'send_invoice',
        arguments: { customer: 'Globex', amount: 1200, currency: 'EUR' },
      });
      const { page } = await signInPage(workspace, 'admin@acme.test');
      const line = page.locator(`#line-${first}`);
      await line.waitFor();
      assert.match(await line.innerText(), /send_invoice/);
      assert.match(
        await line.locator('.summary').innerText(),
        // The values decided on first (money), then the rest.
        /amount=1200, currency="EUR", customer="Globex"/,
      );
      // The soonest deadline is selected and shown in full beside the list.
      const card = page.locator(`#hold-${first}`);
      assert.match(await card.locator('.args').innerText(), /customer: "Globex"/);

      const sameDocument = await markDocument(page);
      const second = await submit(key, { tool_name: 'send_invoice', arguments: { customer: 'Initech' } });
      await page.getByRole('link', { name: '1 new hold: show' }).waitFor();
      await sameDocument();
      assert.equal(await page.locator('#pending-count').innerText(), '2');
      assert.equal(
        await page.locator(`#line-${second}`).count(),
        0,
        'shown when asked, not under the pointer',
      );

      await card.getByLabel('Comment (optional)').fill('Checked with finance');
      await card.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL(/\/app\/inbox$/);
      await page.getByText('Approved.').waitFor();
      assert.equal(await page.locator(`#line-${first}`).count(), 0);
      assert.equal(await page.locator(`#line-${second}`).count(), 1);

      const body = await record(key, first);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.verdict, 'approve');
      assert.equal(body.decision.channel, 'inbox');
      assert.equal(body.decision.reason, 'Checked with finance');
      assert.equal((await record(key, second)).status, 'pending');
    });

    test("another approver's decision reaches an open inbox live, in place", async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const pay = await submit(key, { tool_name: 'pay', arguments: { amount: 25_000, to: 'Supplier AG' } });
      const invoice = await submit(key, { tool_name: 'send_invoice', arguments: { customer: 'Globex' } });
      const ada = await signInPage(workspace, 'admin@acme.test');
      const sam = await signInPage(workspace, 'second@acme.test');
      const samPay = sam.page.locator(`#line-${pay}`);
      await samPay.waitFor();
      assert.match(await samPay.innerText(), /0 of 2/);
      assert.equal(await sam.page.locator('#pending-count').innerText(), '2');
      const sameDocument = await markDocument(sam.page);

      // Four-eyes: Ada's approval shows up on Sam's line; it still waits for Sam.
      await ada.page.goto(`${t.url}/app/inbox?hold=${pay}`);
      await ada.page.locator(`#hold-${pay}`).getByRole('button', { name: 'Approve' }).click();
      await ada.page
        .locator('p.notice[role=status]', { hasText: 'Your approval is recorded; more are needed.' })
        .waitFor();
      await sam.page.locator(`#line-${pay}`, { hasText: '1 of 2 · Ada Admin' }).waitFor();
      assert.equal(await sam.page.locator('#pending-count').innerText(), '2');

      // A single approval by Ada closes the invoice: on Sam's page it stays, greyed, saying who.
      await ada.page.goto(`${t.url}/app/inbox?hold=${invoice}`);
      await ada.page.locator(`#hold-${invoice}`).getByRole('button', { name: 'Approve' }).click();
      await ada.page.locator('p.notice[role=status]', { hasText: 'Approved.' }).waitFor();
      await sam.page.locator(`#line-${invoice}.left`, { hasText: 'Approved by Ada Admin' }).waitFor();
      await sam.page.locator('#pending-count', { hasText: /^1$/ }).waitFor();
      await sameDocument();

      await sam.page.goto(`${t.url}/app/inbox?hold=${pay}`);
      await sam.page.locator(`#hold-${pay}`).getByRole('button', { name: 'Approve' }).click();
      await sam.page.locator('p.notice[role=status]', { hasText: 'Approved.' }).waitFor();
      const body = await record(key, pay);
      assert.equal(body.status, 'approved');
      assert.deepEqual(body.approvals, { required: 2, received: 2 });
    });

    test('agent-supplied text is shown as text: inbox, live update, hold page, history, decision link', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const args = { note: XSS[0], memo: XSS[1], ref: XSS[2], [XSS[1]]: XSS[0] };
      const context = { ticket: XSS[2], html: XSS[0] };
      const label = XSS.join(' ');
      const evil = (overrides: Record<string, unknown> = {}) => ({
        tool_name: 'send_invoice',
        arguments: args,
        context,
        agent_identity: { id: `agent-${XSS[2]}`, label },
        ...overrides,
      });
      const early = await submit(key, evil());
      const opened = await signInPage(workspace, 'admin@acme.test');
      const { page, errors, dialogs } = opened;

      const checkCard = async (id: string) => {
        if (new URL(page.url()).pathname === '/app/inbox') await page.goto(`${t.url}/app/inbox?hold=${id}`);
        const card = page.locator(`#hold-${id}`);
        await card.waitFor();
        if (new URL(page.url()).pathname === '/app/inbox')
          assert.match(await page.locator(`#line-${id}`).innerText(), new RegExp(escapeRegExp(label)));
        assertArgumentsShown(await card.locator('.args').innerText(), args);
        assert.deepEqual(JSON.parse(await card.locator('pre.json').first().innerText()), context);
        assert.match(await card.innerText(), new RegExp(escapeRegExp(label)));
      };
      const checkClean = async (where: string) => {
        // Event handlers would run asynchronously (image errors): give them a moment.
        await page.waitForTimeout(150);
        assert.equal(await page.evaluate(() => (window as any).__xss), undefined, where);
        assert.equal(await page.locator('main script, svg, img[src="x"]').count(), 0, where);
        assert.deepEqual(dialogs, [], where);
        const csp = errors.filter((e) => /Content Security Policy|Refused to (execute|load|apply)/i.test(e));
        assert.deepEqual(csp, [], where);
      };

      await checkCard(early);
      await checkClean('inbox');
      // Arriving live: announced, then shown in the list.
      const late = await submit(key, evil());
      await page.getByRole('link', { name: '1 new hold: show' }).click();
      await page.locator(`#line-${late}`).waitFor();
      await checkClean('inbox, live');
      await checkCard(late);

      // A comment is shown as text too.
      const commented = await submit(key, evil());
      await decideAs(t, workspace.id, commented, 'reject', 'second@acme.test', XSS.join(' '));
      await page.goto(`${t.url}/app/holds/${commented}`);
      await checkCard(commented);
      assert.match(await page.locator('main').innerText(), new RegExp(escapeRegExp(XSS.join(' '))));
      await checkClean('hold page');

      await page.goto(`${t.url}/app/history`);
      await page.getByRole('cell', { name: label }).first().waitFor();
      await checkClean('history');

      await page.goto(await link(workspace, early, 'admin@acme.test', 'email'));
      assertArgumentsShown(await page.locator('.args').innerText(), args);
      assert.match(await page.locator('main').innerText(), new RegExp(escapeRegExp(label)));
      await checkClean('decision link');
      assert.equal((await record(key, early)).status, 'pending');
    });

    test('decision links: GET decides nothing, POST decides once with the link channel, only for its member', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const invoice = await submit(key, { tool_name: 'send_invoice', arguments: { customer: 'Globex' } });
      const url = await link(workspace, invoice, 'admin@acme.test', 'sms');
      assert.match(url, new RegExp(`^${escapeRegExp(t.url)}/d/[A-Za-z0-9_-]{43}$`));

      // Signed in as another member: refused, by GET and by POST, and the link survives.
      const sam = await signInPage(workspace, 'second@acme.test');
      const foreign = await sam.page.goto(url);
      assert.equal(foreign?.status(), 403);
      await sam.page.getByRole('heading', { name: 'Not your link' }).waitFor();
      assert.equal(await sam.page.getByRole('button', { name: 'Approve' }).count(), 0);
      const foreignPost = await sam.context.request.post(url, {
        form: { verdict: 'approve' },
        maxRedirects: 0,
      });
      assert.equal(foreignPost.status(), 403);
      assert.equal((await record(key, invoice)).status, 'pending');

      // Anyone with the link (no session): GET shows the action and a form and decides nothing.
      const { page } = await open();
      const shown = await page.goto(url);
      assert.equal(shown?.status(), 200);
      await page.reload();
      assert.match(await page.locator('main').innerText(), /send_invoice/);
      assert.match(await page.locator('main').innerText(), /Globex/);
      const form = page.locator('form[method="post"]');
      assert.equal(await form.count(), 1);
      assert.equal(await form.locator('button[name="verdict"][value="approve"]').count(), 1);
      assert.equal(await form.locator('button[name="verdict"][value="reject"]').count(), 1);
      assert.equal(await form.locator('[name="comment"]').count(), 1);
      assert.equal((await record(key, invoice)).status, 'pending');

      await page.getByLabel('Comment (optional)').fill('ok by phone');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { name: 'You approved. The action is approved.' }).waitFor();
      assert.match(await page.locator('main').innerText(), /Your comment:\s*ok by phone/);
      const body = await record(key, invoice);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.channel, 'sms');
      assert.equal(body.decision.reason, 'ok by phone');

      // Used: no form any more, and a second POST is refused without changing anything.
      await page.goto(url);
      assert.equal(await page.locator('form[method="post"]').count(), 0);
      const reuse = await page.context().request.post(url, { form: { verdict: 'reject' }, maxRedirects: 0 });
      assert.ok(reuse.status() >= 400, `second use answered ${reuse.status()}`);
      assert.equal((await record(key, invoice)).status, 'approved');
    });

    test('decision links: single use even while a four-eyes hold still waits', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const pay = await submit(key, { tool_name: 'pay', arguments: { amount: 25_000 } });
      const url = await link(workspace, pay, 'admin@acme.test', 'email');
      const { page, context } = await open();
      await page.goto(url);
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { name: 'You approved. 1 of 2 — waiting for finance.' }).waitFor();
      assert.deepEqual((await record(key, pay)).approvals, { required: 2, received: 1 });

      const again = await context.request.post(url, { form: { verdict: 'approve' }, maxRedirects: 0 });
      assert.equal(again.status(), 409);
      await page.goto(url);
      assert.equal(await page.locator('form[method="post"]').count(), 0);
      const body = await record(key, pay);
      assert.equal(body.status, 'pending');
      assert.deepEqual(body.approvals, { required: 2, received: 1 });
    });

    test('decision links: an invalid token and an expired hold get their own pages', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const { page, context } = await open();
      for (const token of ['A'.repeat(43), 'not-a-token', `${'A'.repeat(43)}%3Cscript%3E`]) {
        const answer = await page.goto(`${t.url}/d/${token}`);
        assert.equal(answer?.status(), 404, token);
        await page.getByRole('heading', { name: 'Link not valid' }).waitFor();
        assert.equal(await page.locator('form[method="post"]').count(), 0);
      }

      const quick = await submit(key, { tool_name: 'quick_task', arguments: { job: 'rotate logs' } });
      const url = await link(workspace, quick, 'admin@acme.test', 'email');
      // Moving the clock runs a deadline sweep at the new time.
      await t.clock.advance(2 * 60_000);
      assert.equal((await record(key, quick)).status, 'expired', 'the deadline worker expires the hold');
      await page.goto(url);
      await page.getByRole('heading', { name: /expired without a decision/ }).waitFor();
      assert.equal(await page.locator('form[method="post"]').count(), 0);
      const late = await context.request.post(url, { form: { verdict: 'approve' }, maxRedirects: 0 });
      assert.ok(late.status() >= 400, `a late POST answered ${late.status()}`);
      assert.equal((await record(key, quick)).status, 'expired');
    });

    test('keyboard: Tab reaches the approve button and Enter approves', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const id = await submit(key, { tool_name: 'send_invoice', arguments: { customer: 'Globex' } });
      const { page } = await signInPage(workspace, 'admin@acme.test');
      await page.locator(`#hold-${id}`).waitFor();
      let presses = 0;
      const onApprove = () =>
        page.evaluate(() => document.activeElement?.matches('button[name="verdict"][value="approve"]'));
      // An admin's header has 16 links; the skip link passes them (Tab, Enter), as keyboard users do.
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      while (!(await onApprove())) {
        assert.ok(++presses <= 30, 'the approve button is reachable with Tab');
        await page.keyboard.press('Tab');
      }
      const outline = await page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
      assert.notEqual(outline, 'none', 'keyboard focus is visible');
      await page.keyboard.press('Enter');
      await page.locator('p.notice[role=status]', { hasText: 'Approved.' }).waitFor();
      const body = await record(key, id);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.channel, 'inbox');
    });

    test('the inbox fits a 390 px phone without sideways scrolling, long argument values included', async () => {
      const { workspace, key } = await t.workspace({ config: WORKSPACE });
      const id = await submit(key, {
        tool_name: 'pay',
        arguments: {
          beneficiary: 'Brandt Maschinenbau GmbH',
          iban: 'DE89 3704 0044 0532 0130 00',
          memo: 'x'.repeat(120),
        },
      });
      const opened = await open({ width: 390 });
      await signIn(opened, workspace, 'admin@acme.test');
      const { page } = opened;
      const widths = () =>
        page.evaluate(() => ({
          page: document.documentElement.scrollWidth,
          viewport: document.documentElement.clientWidth,
        }));
      // The list alone, then the chosen hold alone with a way back to the list.
      await page.locator(`#line-${id}`).waitFor();
      assert.equal(await page.locator(`#hold-${id}`).isVisible(), false);
      assert.ok((await widths()).page <= (await widths()).viewport, JSON.stringify(await widths()));
      await page.locator(`#line-${id} a`).click();
      await page.locator(`#hold-${id}`).waitFor();
      assert.equal(await page.locator(`#line-${id}`).isVisible(), false);
      await page.getByRole('link', { name: '← All waiting holds' }).waitFor();
      assert.ok((await widths()).page <= (await widths()).viewport, JSON.stringify(await widths()));
    });
  });
});

function escapeRegExp(text: string) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
