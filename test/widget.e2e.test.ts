/**
 * The embeddable widget in a real browser (headless Chromium): an approver makes an embed token on
 * the app's Widget page, a "customer" page on another origin (another site: `localhost` against the
 * service's `127.0.0.1`) embeds `<approvals-inbox>`, lists the approver's pending holds, decides one
 * (channel `widget`), and drops holds decided elsewhere on its next refresh. Agent-supplied text is
 * shown as text; an unknown or expired token shows that it is no longer valid; viewers get no token.
 * SQLite is enough here (the storage rules are covered elsewhere on both backends).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { SUMMARY_LENGTH } from '../src/channels/messages.ts';
import { summarizeAction } from '../src/domain/summary.ts';
import { EMBED_TOKEN_TTL_MS, mintEmbedToken } from '../src/services/channel-decisions.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, lastEvidence } from './support/app-client.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ana@acme.test, name: Ana Approver, role: approver }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Invoices, tool: send_invoice, effect: approval, approvers: [ana@acme.test, admin@acme.test] }
  - name: Payments
    tool: pay
    when: [{ arg: amount, op: lte, value: 5000 }]
    effect: approval
    approvers: [ana@acme.test]
    editable: [amount, memo]
`;

const XSS = [
  '<script>window.__xss=1</script>',
  '<img src=x onerror=window.__xss=1>',
  '"><svg onload=window.__xss=1>',
] as const;

/** How often the widget refreshes (widget.js REFRESH_MS), and the slack a refresh may take on top. */
const REFRESH_MS = 3000;
const SLACK_MS = 2000;

const NO_LONGER_VALID = 'This embed token is no longer valid.';

const attribute = (value: string) =>
  value.replaceAll('&', '&amp;').replaceAll('"', '&quot;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/**
 * The customer's own tool: a page on another origin that embeds the widget. `/desk?token=...` sets
 * `base-url`; `/desk?token=...&plain=1` is the snippet exactly as the Widget page shows it.
 */
function startCustomerSite(serviceUrl: () => string): Promise<{ origin: string; server: Server }> {
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname !== '/desk') {
      response.writeHead(url.pathname === '/favicon.ico' ? 204 : 404).end();
      return;
    }
    const token = attribute(url.searchParams.get('token') ?? '');
    const base = url.searchParams.has('plain') ? '' : ` base-url="${attribute(serviceUrl())}"`;
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en">
  <head><meta charset="utf-8" /><title>Acme support desk</title></head>
  <body>
    <h1>Support desk</h1>
    <script src="${attribute(serviceUrl())}/widget.js" defer></script>
    <approvals-inbox token="${token}"${base}></approvals-inbox>
  </body>
</html>`);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      // Another host name than the service's 127.0.0.1: another origin and another site.
      resolve({ origin: `http://localhost:${port}`, server });
    });
  });
}

describe('the widget in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;
  let key = '';
  let customer: { origin: string; server: Server };
  /** Ana's embed token, made on the Widget page (first test), used by the tests after it. */
  let anaToken = '';
  const pages: TestPage[] = [];
  const app = appClient(() => t);

  before(async () => {
    [browser, t] = await Promise.all([launchBrowser(), startTestService(sqlite)]);
    ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
    customer = await startCustomerSite(() => t.url);
  });
  after(async () => {
    await Promise.all(pages.map((p) => p.close()));
    await closeBrowser(browser);
    await new Promise((resolve) => customer?.server.close(resolve));
    await t?.close();
  });

  async function open() {
    const opened = await openPage(browser);
    pages.push(opened);
    return opened;
  }

  const submit = async (overrides: Record<string, unknown> = {}) => {
    const answer = await call(t.url, 'POST', '/api/v1/holds', {
      key,
      body: submission({ tool_name: 'send_invoice', ...overrides }),
    });
    assert.equal(answer.status, 201, answer.text);
    assert.equal(answer.body.status, 'pending', answer.text);
    return answer.body.id as string;
  };
  const record = async (id: string) => (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;

  /** The customer's page with the widget, in a fresh profile. */
  async function openDesk(token: string, options: { plain?: boolean } = {}) {
    const opened = await open();
    const query = new URLSearchParams({ token, ...(options.plain ? { plain: '1' } : {}) });
    await opened.page.goto(`${customer.origin}/desk?${query}`);
    assert.notEqual(new URL(opened.page.url()).origin, new URL(t.url).origin);
    return opened;
  }

  /** A hold's card inside the widget (locators pierce its open shadow root). */
  const card = (page: Page, id: string) => page.locator(`approvals-inbox [data-hold="${id}"]`);

  test('the Widget page makes an embed token, shown once, that opens the widget API', async () => {
    const { page, errors } = await open();
    const { url } = await inviteLink(t.service.ctx, workspace, 'ana@acme.test');
    await page.goto(url);
    await page.getByRole('button', { name: 'Continue to approvals' }).click();
    await page.waitForURL('**/app/inbox');

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Widget' }).click();
    await page.waitForURL('**/app/widget');
    await page.getByRole('heading', { name: 'Widget', level: 1 }).waitFor();
    const snippet = await page.locator('main pre').innerText();
    assert.match(snippet, new RegExp(`<script src="${escapeRegExp(t.url)}/widget\\.js" defer></script>`));
    assert.match(snippet, /<approvals-inbox token="EMBED_TOKEN"><\/approvals-inbox>/);
    assert.match(await page.locator('main').innerText(), /for 12 hours/);

    await page.getByRole('button', { name: 'Make an embed token' }).click();
    await page.getByRole('heading', { name: 'Your embed token' }).waitFor();
    assert.match(await page.locator('main').innerText(), /It will not be shown again/);
    anaToken = (await page.locator('#embed-token').innerText()).trim();
    assert.match(anaToken, /^emb_[A-Za-z0-9_-]{43}$/);

    // The token stands for Ana, and the API lets any origin read it.
    const answer = await call(t.url, 'GET', '/widget/api/holds', {
      key: anaToken,
      headers: { origin: customer.origin },
    });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.member.name, 'Ana Approver');
    assert.deepEqual(answer.body.holds, []);
    assert.equal(answer.headers.get('access-control-allow-origin'), '*');
    assert.equal(answer.headers.get('cache-control'), 'no-store');

    // Shown once: the page opened again has no token.
    await page.goto(`${t.url}/app/widget`);
    assert.ok(!(await page.content()).includes(anaToken));
    assert.equal(await page.locator('#embed-token').count(), 0);
    assert.deepEqual(errors, [], 'no console errors on the Widget page');
  });

  test('a viewer has no Widget page link and cannot make a token (403)', async () => {
    const viewer = await app.signIn(workspace, 'vic@acme.test');
    const inbox = await app.get(viewer, '/app/inbox');
    assert.equal(inbox.status, 200);
    assert.ok(!inbox.text.includes('href="/app/widget"'), 'no Widget link for a viewer');

    const made = await app.post(viewer, '/app/widget/token', {});
    assert.equal(made.status, 403, made.text);
    assert.match(made.text, /Viewers do not decide/);
    assert.doesNotMatch(made.text, /emb_[A-Za-z0-9_-]{43}/);
    const vic = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'vic@acme.test'))!;
    const rows = await t.service.ctx.db.one<{ n: number }>(
      'SELECT COUNT(*) AS n FROM embed_tokens WHERE member_id = $1',
      [vic.id],
    );
    assert.equal(Number(rows!.n), 0, 'no token stored for the viewer');
  });

  test('the CORS preflight lets another origin send the token', async () => {
    const response = await fetch(`${t.url}/widget/api/holds/hld_x/decision`, {
      method: 'OPTIONS',
      headers: {
        origin: customer.origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.match(response.headers.get('access-control-allow-headers') ?? '', /authorization/i);
    assert.match(response.headers.get('access-control-allow-methods') ?? '', /POST/);
  });

  test('the widget on another site lists pending holds, decides one (channel widget), drops one decided elsewhere', async () => {
    assert.ok(anaToken, 'the token from the first test');
    const first = await submit({ arguments: { customer: 'Globex', amount: 1200, currency: 'EUR' } });
    const second = await submit({ arguments: { customer: 'Initech', amount: 80, currency: 'EUR' } });
    const { page, errors, dialogs } = await openDesk(anaToken);

    await card(page, first).waitFor();
    await card(page, second).waitFor();
    assert.equal(await page.locator('approvals-inbox [data-hold]').count(), 2);
    const text = await card(page, first).innerText();
    assert.match(text, /Billing bot wants to run send_invoice on SDK/);
    assert.match(text, /send_invoice\(customer="Globex", amount=1200, currency="EUR"\)/);
    assert.match(text, /decide by /);

    // Approve the first: decided as Ana through the widget, and it leaves the list.
    await card(page, first).getByRole('button', { name: 'Approve' }).click();
    await card(page, first).waitFor({ state: 'detached' });
    assert.equal(await card(page, second).count(), 1, 'the other hold still waits');
    const approved = await record(first);
    assert.equal(approved.status, 'approved');
    assert.equal(approved.decision.verdict, 'approve');
    assert.equal(approved.decision.channel, 'widget');
    const evidence = await lastEvidence(t, workspace);
    assert.equal(evidence.type, 'hold.approved');
    assert.equal(evidence.data.channel, 'widget');
    assert.equal(evidence.data.member.email, 'ana@acme.test');

    // Decided elsewhere (Ada rejects it in the app's inbox): gone from the widget on its next refresh.
    const ada = await app.signIn(workspace, 'admin@acme.test');
    const rejected = await app.post(ada, `/app/holds/${second}/decide`, { verdict: 'reject' });
    assert.equal(rejected.status, 303, rejected.text);
    const started = Date.now();
    await card(page, second).waitFor({ state: 'detached', timeout: REFRESH_MS + SLACK_MS });
    assert.ok(Date.now() - started <= REFRESH_MS + SLACK_MS);
    assert.equal((await record(second)).decision.channel, 'inbox');
    await page.locator('approvals-inbox').getByText('Nothing waits for you.').waitFor();

    // A decision sent again for a closed hold changes nothing.
    const again = await call(t.url, 'POST', `/widget/api/holds/${second}/decision`, {
      key: anaToken,
      body: { verdict: 'approve' },
    });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.outcome, 'closed');
    assert.equal((await record(second)).status, 'rejected');

    assert.deepEqual(errors, [], 'no console errors (CORS included) on the customer page');
    assert.deepEqual(dialogs, []);
  });

  test('agent-supplied text is shown as text in the widget and never runs', async () => {
    assert.ok(anaToken, 'the token from the first test');
    const args = { note: XSS[0], memo: XSS[1], [XSS[1]]: XSS[2] };
    const label = XSS.join(' ');
    const evil = await submit({ arguments: args, agent_identity: { id: `agent-${XSS[2]}`, label } });
    // The snippet exactly as the Widget page shows it: no base-url, the script's own origin.
    const { page, dialogs } = await openDesk(anaToken, { plain: true });

    const shown = card(page, evil);
    await shown.waitFor();
    assert.equal(
      await shown.locator('div').first().textContent(),
      `${label} wants to run send_invoice on SDK`,
    );
    const summary = summarizeAction('send_invoice', args, SUMMARY_LENGTH.widget);
    assert.ok(summary.complete);
    assert.equal(await shown.locator('.summary').textContent(), summary.text);
    // Image errors would fire asynchronously: give them a moment, and a refresh to re-render.
    await page.waitForTimeout(REFRESH_MS + 500);
    await shown.waitFor();
    assert.equal(await page.evaluate(() => (window as any).__xss), undefined);
    assert.equal(
      await page.locator('approvals-inbox script, approvals-inbox img, approvals-inbox svg').count(),
      0,
    );
    assert.deepEqual(dialogs, []);

    await shown.getByRole('button', { name: 'Reject' }).click();
    await shown.waitFor({ state: 'detached' });
    const body = await record(evil);
    assert.equal(body.status, 'rejected');
    assert.equal(body.decision.channel, 'widget');
    assert.equal(await page.evaluate(() => (window as any).__xss), undefined);
  });

  test('a hold the widget cannot show in full offers Review, not Approve, and the API refuses to decide it', async () => {
    assert.ok(anaToken, 'the token from the first test');
    // The attack of issue 19: a memo of spaces pushed the amount and the payee out of the summary.
    const args = { memo: ' '.repeat(400), amount: 950000, payee: 'Mallory Ltd' };
    const hidden = await submit({ arguments: args });
    const { page, errors } = await openDesk(anaToken);
    const shown = card(page, hidden);
    await shown.waitFor();
    assert.equal(await shown.getByRole('button').count(), 0, 'no Approve, no Reject');
    const review = shown.getByRole('link', { name: 'Review' });
    assert.equal(await review.getAttribute('href'), `${t.url}/app/holds/${hidden}`);
    const summary = (await shown.locator('.summary').textContent()) ?? '';
    assert.match(summary, /amount=950000, payee="Mallory Ltd"\)$/, 'the short values are still shown');
    assert.match(await shown.innerText(), /review it in full/i);

    // A script with the token cannot decide it either.
    const refused = await call(t.url, 'POST', `/widget/api/holds/${hidden}/decision`, {
      key: anaToken,
      body: { verdict: 'approve' },
    });
    assert.equal(refused.status, 403, refused.text);
    assert.deepEqual(refused.body, { error: 'review_required' });
    assert.equal((await record(hidden)).status, 'pending');
    const listed = await call(t.url, 'GET', '/widget/api/holds', { key: anaToken });
    const entry = listed.body.holds.find((hold: { id: string }) => hold.id === hidden);
    assert.equal(entry.complete, false);
    assert.equal(entry.review_url, `${t.url}/app/holds/${hidden}`);
    assert.deepEqual(errors, []);

    // Decided in the app instead, so the tests after this one see only their own holds.
    const ana = await app.signIn(workspace, 'ana@acme.test');
    assert.equal((await app.post(ana, `/app/holds/${hidden}/decide`, { verdict: 'reject' })).status, 303);
  });

  test('a decision that fails leaves the hold listed and raises no uncaught error', async () => {
    assert.ok(anaToken, 'the token from the first test');
    const pending = await submit({ arguments: { customer: 'Hooli', amount: 7 } });
    const { page, errors } = await openDesk(anaToken);
    await card(page, pending).waitFor();
    // The service is out of reach for this one call.
    await page.route('**/widget/api/holds/*/decision', (route) =>
      route.fulfill({
        status: 503,
        headers: { 'access-control-allow-origin': '*' },
        contentType: 'application/json',
        body: '{"error":"unavailable"}',
      }),
    );
    await card(page, pending).getByRole('button', { name: 'Approve' }).click();
    await card(page, pending).getByRole('button', { name: 'Approve', disabled: false }).waitFor();
    assert.equal((await record(pending)).status, 'pending');
    await page.getByRole('alert').filter({ hasText: 'The decision could not be sent' }).waitFor();
    await page.waitForTimeout(200);
    assert.deepEqual(
      errors.filter((error) => error.startsWith('pageerror')),
      [],
      'no uncaught error in the customer page',
    );
  });

  test('an unknown token shows that it is no longer valid', async () => {
    for (const token of [`emb_${'A'.repeat(43)}`, 'not-a-token', '']) {
      const { page } = await openDesk(token);
      const alert = page.locator('approvals-inbox').getByRole('alert');
      await alert.waitFor();
      assert.equal(await alert.innerText(), NO_LONGER_VALID, `token ${JSON.stringify(token)}`);
      assert.equal(await page.locator('approvals-inbox [data-hold]').count(), 0);
    }
    // The 401 carries the CORS header, so the browser lets the widget read it.
    const answer = await call(t.url, 'GET', '/widget/api/holds', { key: `emb_${'A'.repeat(43)}` });
    assert.equal(answer.status, 401);
    assert.equal(answer.headers.get('access-control-allow-origin'), '*');
    const decision = await call(t.url, 'POST', '/widget/api/holds/hld_x/decision', {
      key: 'not-a-token',
      body: { verdict: 'approve' },
    });
    assert.equal(decision.status, 401);
  });

  test('approve with changes: boxes for the editable arguments, typed as submitted; the rule checked again', async () => {
    assert.ok(anaToken, 'the token from the first test');
    const answer = await call(t.url, 'POST', '/api/v1/holds', {
      key,
      body: submission({ tool_name: 'pay', arguments: { amount: 1200, memo: 'May rent', to: 'ACME' } }),
    });
    assert.equal(answer.body.status, 'pending', answer.text);
    const id = answer.body.id as string;
    const listed = await call(t.url, 'GET', '/widget/api/holds', { key: anaToken });
    const line = listed.body.holds.find((hold: { id: string }) => hold.id === id);
    assert.deepEqual(line.editable, ['amount', 'memo']);
    assert.deepEqual(line.values, { amount: 1200, memo: 'May rent' });

    const { page, errors } = await openDesk(anaToken);
    const held = card(page, id);
    await held.waitFor();
    // Hidden until asked for; filled with the values as submitted.
    assert.equal(await held.getByLabel('amount').isVisible(), false);
    await held.getByRole('button', { name: 'Approve with changes…' }).click();
    assert.equal(await held.getByLabel('amount').inputValue(), '1200');
    assert.equal(await held.getByLabel('memo').inputValue(), 'May rent');

    // Not a number: said in the card, nothing sent.
    await held.getByLabel('amount').fill('twelve');
    await held.getByRole('button', { name: 'Approve with these values' }).click();
    await held.getByText('Not approved: amount must be a number.').waitFor();
    assert.equal((await record(id)).status, 'pending');

    // Over the rule's limit: the service refuses it, the widget says why, the hold still waits.
    await held.getByLabel('amount').fill('9000');
    await held.getByRole('button', { name: 'Approve with these values' }).click();
    const refused = page
      .locator('approvals-inbox')
      .getByRole('alert')
      .filter({ hasText: 'no longer matches' });
    await refused.waitFor();
    assert.match(
      await refused.innerText(),
      /^Not approved: changes: the changed call no longer matches the rule "Payments"/,
    );
    assert.equal((await record(id)).status, 'pending');

    await held.getByRole('button', { name: 'Approve with changes…' }).click();
    await held.getByLabel('amount').fill('900');
    await held.getByRole('button', { name: 'Approve with these values' }).click();
    await held.waitFor({ state: 'detached' });
    const decided = await record(id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decision.channel, 'widget');
    assert.deepEqual(decided.decision.changed_arguments, { amount: 900, memo: 'May rent', to: 'ACME' });
    // The browser logs the refused request (422) itself; nothing else.
    assert.deepEqual(
      errors.filter((error) => !error.includes('status of 422')),
      [],
      'no console errors in the widget',
    );
  });

  test('an expired token: an open widget says so on its next refresh (12 hours)', async () => {
    assert.ok(anaToken, 'the token from the first test');
    const ana = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'ana@acme.test'))!;
    const minted = t.clock.now();
    const { token, expiresAt } = await mintEmbedToken(t.service.ctx, ana);
    assert.ok(expiresAt >= minted + EMBED_TOKEN_TTL_MS && expiresAt <= t.clock.now() + EMBED_TOKEN_TTL_MS);
    const pending = await submit({ arguments: { customer: 'Umbrella', amount: 5 } });
    const { page } = await openDesk(token);
    await card(page, pending).waitFor();

    t.clock.advance(EMBED_TOKEN_TTL_MS - 60_000);
    assert.equal((await call(t.url, 'GET', '/widget/api/holds', { key: token })).status, 200, 'alive');
    t.clock.advance(60_000);
    const alert = page.locator('approvals-inbox').getByRole('alert');
    await alert.waitFor({ timeout: REFRESH_MS + SLACK_MS });
    assert.equal(await alert.innerText(), NO_LONGER_VALID);
    assert.equal(await card(page, pending).count(), 0);
    for (const old of [token, anaToken]) {
      assert.equal((await call(t.url, 'GET', '/widget/api/holds', { key: old })).status, 401);
    }
  });
});

function escapeRegExp(text: string) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
