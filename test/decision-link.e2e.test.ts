/**
 * Seeing what you approve (issue 20), in Chromium on both backends: the decision link shows every
 * argument whole (wrapped, never cut), why the hold waits in words, the four-eyes state, the workspace's
 * branding, and after a decision a success state with the comment; a signed-out visit to a hold comes
 * back to it after sign-in, and only to a path of this service.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';

const LOGO = 'https://logo.globex.test/mark.svg';
const WORKSPACE = `name: Globex Treasury
branding: { logo_url: "${LOGO}", accent_color: "#7a1fa2" }
members:
  - { email: admin@globex.test, name: Ada Admin, role: admin }
  - { email: fin@globex.test, name: Finn Finance, role: approver }
  - { email: max@globex.test, name: Max Money, role: approver }
  - { email: val@globex.test, name: Val Viewer, role: viewer }
  - { email: zoe@globex.test, name: Zoe Zoned, role: approver, time_zone: Europe/Berlin }
groups: { finance: [fin@globex.test, max@globex.test] }
tools:
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - name: Large payments
    tool: pay
    when: [{ arg: amount, op: gt, value: 1000 }]
    effect: approval
    approvers: ["group:finance"]
    approvals_required: 2
`;

/** A Maltese IBAN (31 characters), the longest kind, deep in the arguments as a payments agent sends it. */
const IBAN = 'MT84MALT011000012345MTLCAST001S';
const PAYMENT = {
  amount: 4200,
  currency: 'EUR',
  beneficiary: {
    name: 'Globex Corporation Malta Ltd',
    bank_account: { beneficiary_account_iban: IBAN, bic: 'MALTMTMT' },
  },
  memo: 'Invoice 2026-114, second instalment for the harbour crane maintenance contract',
};

/** Where a text on the page is cut: characters outside the window or outside a box that clips them. */
function hiddenParts(page: Page, text: string) {
  return page.evaluate((needle) => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const problems: string[] = [];
    let found = 0;
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const at = node.textContent!.indexOf(needle);
      if (at < 0) continue;
      found += 1;
      const range = document.createRange();
      range.setStart(node, at);
      range.setEnd(node, at + needle.length);
      for (const rect of range.getClientRects()) {
        if (rect.left < 0 || rect.right > window.innerWidth + 0.5) problems.push('outside the window');
        for (let box = node.parentElement; box; box = box.parentElement) {
          if (getComputedStyle(box).overflowX === 'visible') continue;
          const bounds = box.getBoundingClientRect();
          if (rect.left < bounds.left - 0.5 || rect.right > bounds.right + 0.5)
            problems.push(`clipped by ${box.tagName.toLowerCase()}.${box.className}`);
        }
      }
    }
    return found === 0 ? ['not on the page'] : problems;
  }, text);
}

for (const backend of backends) {
  describe(
    `seeing what you approve (${backend.name})`,
    { skip: backend.skip ?? browserSkip, concurrency: 1 },
    () => {
      let browser: Browser;
      let t: TestService;
      let smtp: TestSmtp;
      const pages: TestPage[] = [];

      before(async () => {
        browser = await launchBrowser();
        smtp = await startSmtp();
        t = await startTestService(backend, { env: smtp.env });
      });
      after(async () => {
        await Promise.all(pages.map((p) => p.close()));
        await closeBrowser(browser);
        await t?.close();
        await smtp?.close();
      });
      // Sign-in forms and decision links share a small per-IP quota: a new window each test.
      beforeEach(() => t.clock.advance(60_000));

      async function open(width = 1280, timezoneId?: string) {
        const opened = await openPage(browser, { width, height: 900, timezoneId });
        // The service's clock runs ahead of the browser's in these tests (each test moves it): the page's
        // relative times are reckoned from the service's.
        await opened.context.addInitScript((skew) => {
          const now = Date.now;
          Date.now = () => now() + skew;
        }, t.clock.now() - Date.now());
        // The workspace's logo, served without leaving the machine.
        await opened.context.route(LOGO, (route) =>
          route.fulfill({
            contentType: 'image/svg+xml',
            body: '<svg xmlns="http://www.w3.org/2000/svg" width="32" height="32"><rect width="32" height="32" fill="#7a1fa2"/></svg>',
          }),
        );
        pages.push(opened);
        return opened;
      }

      async function payment(config = WORKSPACE): Promise<{ workspace: Workspace; key: string; id: string }> {
        const { workspace, key } = await t.workspace({ config });
        const answer = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({
            tool_name: 'pay',
            arguments: PAYMENT,
            agent_identity: { id: 'payments-agent' },
          }),
        });
        assert.equal(answer.body.status, 'pending', answer.text);
        return { workspace, key, id: answer.body.id };
      }

      async function link(workspace: Workspace, holdId: string, email: string) {
        const hold = (await findHold(t.service.ctx.db, workspace.id, holdId))!;
        const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, email))!;
        return mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' });
      }

      for (const width of [1280, 390]) {
        test(`the decision link at ${width} px: every argument whole, why it waits, who decides, the branding`, async () => {
          const { workspace, id } = await payment();
          await decideAs(t, workspace.id, id, 'approve', 'max@globex.test', 'Matches invoice 2026-114.');
          const { page } = await open(width);
          await page.goto(await link(workspace, id, 'fin@globex.test'));
          for (const value of [IBAN, PAYMENT.memo, PAYMENT.beneficiary.name])
            assert.deepEqual(await hiddenParts(page, value), [], value);
          assert.ok(
            await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
            'no sideways scrolling',
          );
          const main = await page.locator('main').innerText();
          assert.match(main, /amount 4200 is more than 1000/);
          assert.equal(
            await page.locator('mark').filter({ hasText: '4200' }).count(),
            1,
            'the amount is marked',
          );
          assert.match(main, /1 of 2\s*approvals · waiting for finance/);
          assert.match(main, /Max Money approved .* via inbox\s*Matches invoice 2026-114\./);
          assert.match(main, /Can still decide: Finn Finance/);
          // The workspace's name, logo and colour.
          assert.match(await page.locator('.brand').innerText(), /Globex Treasury/);
          assert.ok(
            await page
              .locator(`.brand img[src="${LOGO}"]`)
              .evaluate((img: HTMLImageElement) => img.naturalWidth > 0),
          );
          assert.equal(
            await page
              .locator('body')
              .evaluate((body) => getComputedStyle(body).getPropertyValue('--accent').trim()),
            '#7a1fa2',
          );
          await page.screenshot({ path: `/tmp/decision-link-${backend.name}-${width}.png`, fullPage: true });
        });
      }

      for (const width of [1280, 390]) {
        test(`at ${width} px, values nested 5 and 32 levels deep and an IBAN padded with spaces are all in sight`, async () => {
          const { workspace, key } = await t.workspace({ config: WORKSPACE });
          const deepIban = 'DE89370400440532013000';
          const arguments_ = {
            amount: 4200,
            invoice: { lines: { payment: { beneficiary: { iban: IBAN, amount: 4200 } } } },
            // 32 levels, the most a submission may nest.
            deep: JSON.parse(`${'{"a":'.repeat(30)}{"iban":"${deepIban}"}${'}'.repeat(30)}`),
            padded: `${' '.repeat(190)}${'GB29NWBK60161331926819'}`,
          };
          const answer = await call(t.url, 'POST', '/api/v1/holds', {
            key,
            body: submission({ tool_name: 'pay', arguments: arguments_ }),
          });
          assert.equal(answer.body.status, 'pending', answer.text);
          const { page } = await open(width);
          await page.goto(await link(workspace, answer.body.id, 'fin@globex.test'));
          const args = page.locator('.args');
          for (const value of [IBAN, deepIban, 'GB29NWBK60161331926819']) {
            // In sight as the page opens: not inside a closed fold, not cut, not outside the window.
            await args.getByText(value).first().waitFor({ state: 'visible' });
            assert.deepEqual(await hiddenParts(page, value), [], value);
          }
          assert.match(await args.innerText(), /190 spaces/);
          assert.ok(
            await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth),
            'no sideways scrolling',
          );
          assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 1);
          await page.screenshot({
            path: `/tmp/decision-link-deep-${backend.name}-${width}.png`,
            fullPage: true,
          });
        });
      }

      test("times: in the reader's zone, named, with a relative form; without script in UTC", async () => {
        const { workspace, id } = await payment();
        const url = await link(workspace, id, 'fin@globex.test');
        const { page } = await open(390, 'America/New_York');
        await page.goto(url);
        const requested = page.locator('dl.facts time').first();
        await requested.filter({ hasText: '·' }).waitFor();
        assert.match(
          await requested.innerText(),
          /^\w{3} \d{1,2}, \d\d:\d\d (AM|PM) EST · (now|\d+ min ago)$/,
        );
        assert.match((await requested.getAttribute('title'))!, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
        // Hours and minutes: a deadline 240 min away, opened a moment later, is not "in 3 h".
        assert.match(
          await page.locator('time.countdown').innerText(),
          /^in (3 h 59 min|4 h) \(\d\d:\d\d (AM|PM) EST\)$/,
        );

        // A member who saved a time zone reads every time in it, whatever the browser's zone.
        const { page: zoned } = await open(390, 'America/New_York');
        await zoned.goto(await link(workspace, id, 'zoe@globex.test'));
        const times = zoned.locator('time');
        await times.first().filter({ hasText: '·' }).waitFor();
        const texts = await times.allInnerTexts();
        assert.ok(texts.length >= 2, texts.join(' | '));
        for (const text of texts) assert.match(text, /\d\d:\d\d (AM|PM) (GMT\+1|CET)\b/, text);
        assert.match(await zoned.locator('time.countdown').innerText(), /^in (3 h 59 min|4 h) \(/);

        const { page: plain } = await open(390);
        await plain.route('**/app/static/time.js', (route) =>
          route.fulfill({ body: '', contentType: 'text/javascript' }),
        );
        await plain.goto(url);
        assert.match(
          await plain.locator('dl.facts time').first().innerText(),
          /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/,
        );
      });

      test('after approving: a success state with the four-eyes count, the comment echoed', async () => {
        const { workspace, key, id } = await payment();
        const { page } = await open(390);
        await page.goto(await link(workspace, id, 'fin@globex.test'));
        await page.getByLabel('Comment (optional)').fill('Checked the IBAN against <the contract> ✓');
        await page.getByRole('button', { name: 'Approve' }).click();
        await page.getByRole('heading', { name: 'You approved. 1 of 2 — waiting for finance.' }).waitFor();
        const main = await page.locator('main').innerText();
        assert.match(main, /Checked the IBAN against <the contract> ✓/);
        assert.match(main, /Can still decide: Max Money/);
        assert.match(await page.locator('.brand').innerText(), /Globex Treasury/);
        assert.equal(await page.locator('form[method="post"]').count(), 0);
        await page.screenshot({
          path: `/tmp/decision-link-approved-${backend.name}-390.png`,
          fullPage: true,
        });
        const record = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.deepEqual(record.body.approvals, { required: 2, received: 1 });
      });

      test('after rejecting: the outcome as heading, the way on to the next hold, accessible', async () => {
        const { workspace, key, id } = await payment();
        const other = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({
            tool_name: 'pay',
            arguments: PAYMENT,
            agent_identity: { id: 'payments-agent' },
          }),
        });
        assert.equal(other.body.status, 'pending', other.text);
        const { page } = await open(390);
        await page.goto(await link(workspace, id, 'fin@globex.test'));
        await page.getByRole('button', { name: 'Reject' }).click();
        await page.getByRole('heading', { name: 'You rejected. The action is rejected.' }).waitFor();
        const next = page.getByRole('link', { name: 'Next hold waiting for you' });
        assert.equal(await next.getAttribute('href'), `/app/holds/${other.body.id}`);
        assert.equal(await page.getByRole('link', { name: 'Open the inbox' }).count(), 1);
        const result = await new AxeBuilder({ page })
          .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'])
          .analyze();
        const serious = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
        assert.deepEqual(
          serious.map((v) => v.id),
          [],
        );
        // Signed out, the next hold's page asks for a sign-in first.
        await next.click();
        await page.waitForURL('**/app/login**');
      });

      test('deciding a hold someone else decided meanwhile: the same page, with a notice and the outcome', async () => {
        const { workspace, id } = await payment();
        const { page } = await open();
        await page.goto(await link(workspace, id, 'fin@globex.test'));
        await decideAs(t, workspace.id, id, 'reject', 'max@globex.test', 'Wrong beneficiary');
        await page.getByRole('button', { name: 'Approve' }).click();
        const notice = page.locator('main .notice');
        await notice.waitFor();
        assert.match(await notice.innerText(), /Not decided: this action was rejected before your answer\./);
        const main = await page.locator('main').innerText();
        assert.match(main, /Max Money rejected/);
        assert.match(main, /Wrong beneficiary/);
        assert.equal(new URL(page.url()).pathname.startsWith('/d/'), true);
      });

      /** Asks for a sign-in link on the open login page and follows it from the mail, in the same browser. */
      async function signInByMail(page: Page, email: string) {
        await page.getByLabel('E-mail').fill(email);
        await page.getByRole('button', { name: 'Send me a sign-in link' }).click();
        await page.locator('main .notice').waitFor();
        // Skip the approval requests this member gets by e-mail too.
        let link: string | undefined;
        while (!link) link = (await smtp.next(email)).links.find((l) => l.includes('/app/login/'));
        await page.goto(link);
        await page.getByRole('button', { name: 'Continue to approvals' }).click();
      }

      test('a signed-out visit to a hold comes back to it after signing in by e-mail', async () => {
        // A member of this workspace only: sign-in by e-mail opens the first workspace of an address.
        const { id } = await payment(WORKSPACE.replaceAll('fin@globex.test', 'fiona@globex.test'));
        const { page } = await open(390);
        await page.goto(`${t.url}/app/holds/${id}`);
        assert.equal(new URL(page.url()).pathname, '/app/login');
        await signInByMail(page, 'fiona@globex.test');
        await page.waitForURL(`**/app/holds/${id}`);
        assert.match(await page.locator('main').innerText(), /amount: 4200/);
      });

      test('after sign-in only a path of the app is followed: absolute and protocol-relative URLs are refused', async () => {
        await t.workspace({ config: WORKSPACE });
        const refused = [
          'https://evil.test/app/inbox',
          '//evil.test/app/inbox',
          '/\\evil.test/app',
          '/app/\\evil.test',
          'javascript:alert(1)',
          '/docs',
        ];
        for (const next of refused) {
          t.clock.advance(60_000);
          const { page } = await open();
          await page.goto(`${t.url}/app/login?next=${encodeURIComponent(next)}`);
          assert.equal(await page.locator('input[name="next"]').count(), 0, next);
          // Posted by hand, past the form: no return is kept.
          const posted = await page.context().request.post(`${t.url}/app/login`, {
            form: { email: 'nobody@globex.test', next },
            maxRedirects: 0,
          });
          assert.equal(posted.status(), 200);
          assert.equal(posted.headers()['set-cookie'], undefined, next);
          await signInByMail(page, 'fin@globex.test');
          await page.waitForURL('**/app/inbox');
        }
      });
    },
  );
}
