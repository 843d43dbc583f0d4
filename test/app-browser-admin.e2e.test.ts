/**
 * The admin pages in a real browser (headless Chromium): an API key made in the app works at once,
 * a rule built in the rule builder decides the next matching call, and a new tool classified with
 * its button decides its next call. SQLite is enough here (fetch-level suites cover both backends).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
tools:
  - { connection: SDK, tool: pay.send, classification: approval }
`;

describe('the admin pages in a browser', { skip: browserSkip, concurrency: 1 }, () => {
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;
  let opened: TestPage;
  /** The key made in the app (test 1), used by the tests after it. */
  let madeKey = '';

  const hold = (key: string, overrides: Record<string, unknown>) =>
    call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });

  before(async () => {
    [browser, t] = await Promise.all([launchBrowser(), startTestService(sqlite)]);
    ({ workspace } = await t.workspace({ config: WORKSPACE }));
    opened = await openPage(browser, { baseURL: t.url });
    const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
    await opened.page.goto(url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
  });
  after(async () => {
    await opened?.close();
    await closeBrowser(browser);
    await t?.close();
  });

  test('an API key made in the app is shown once and works on POST /api/v1/holds', async () => {
    const { page } = opened;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL('**/app/admin/keys');
    await page.getByRole('heading', { name: 'API keys', level: 1 }).waitFor();
    await page.getByLabel(/^Name/).fill('Billing agent');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('heading', { name: /New live key “Billing agent”/ }).waitFor();
    assert.match(await page.locator('main').innerText(), /It will not be shown again/);

    // Copied from the page, as a person would.
    madeKey = (await page.locator('#new-key-value').innerText()).trim();
    assert.match(madeKey, /^svc_live_[A-Za-z0-9_-]{43}$/);
    // The copy button (shown by copy.js) copies it, or selects it where the clipboard is refused.
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
    await page.getByRole('button', { name: 'Copy the key' }).click();
    await page
      .locator('#new-key-value-copied')
      .getByText(/^(Copied\.|Selected: press Ctrl\+C)/)
      .waitFor();
    const copied = (await page.locator('#new-key-value-copied').innerText()) === 'Copied.';
    const taken = await page.evaluate(
      (clipboard) => (clipboard ? navigator.clipboard.readText() : String(getSelection())),
      copied,
    );
    assert.equal(taken.trim(), madeKey, copied ? 'on the clipboard' : 'selected');
    const submitted = await hold(madeKey, { tool_name: 'pay.send', arguments: { amount: 10 } });
    assert.equal(submitted.status, 201, submitted.text);
    assert.equal(submitted.body.status, 'pending');

    // Shown once: the list has the key's name, never the key itself.
    await page.goto('/app/admin/keys');
    assert.match(await page.locator('main').innerText(), /Billing agent/);
    assert.ok(!(await page.content()).includes(madeKey));
  });

  test('a rule built in the rule builder denies the next matching call', async () => {
    assert.ok(madeKey, 'the key from the test before');
    const { page } = opened;
    await page.goto('/app/admin/rules');
    await page.getByRole('link', { name: 'New rule' }).click();
    await page.waitForURL('**/app/admin/rules?new');

    await page.getByLabel('Name', { exact: true }).fill('No large payments');
    await page.getByLabel('Connection').selectOption('SDK');
    await page.getByLabel(/^Tool/).fill('pay.*');
    const condition = page.getByRole('group', { name: 'Condition 1' });
    await condition.getByLabel('Argument').fill('amount');
    await condition.getByLabel('Operator').selectOption('gt');
    await condition.getByLabel('Value type').selectOption('number');
    await condition.getByLabel('Value', { exact: true }).fill('a thousand');
    await page.getByLabel('Effect').selectOption('deny');
    await page.getByRole('button', { name: 'Save rule' }).click();
    // A refused form: the summary of its problems takes the focus, and what was typed stays.
    await page.locator('#problems').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'problems');
    assert.match(await page.locator('#problems').innerText(), /Condition 1, value: Is not a number/);
    // Chromium logs the refusal's 422 as a console error: expected here, not by the next test.
    assert.deepEqual(opened.errors.splice(0), [
      'Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)',
    ]);
    await condition.getByLabel('Value', { exact: true }).fill('1000');
    await page.getByLabel(/^Reason given with a denial/).fill('Payments over 1000 go through finance');
    await page.getByRole('button', { name: 'Save rule' }).click();
    await page.waitForURL(/\/app\/admin\/rules$/);
    await page.getByText('Rule saved.').waitFor();
    const row = page.locator('#rule-list tr', { hasText: 'No large payments' });
    assert.match(await row.innerText(), /amount is more than 1000/);
    assert.match(await row.innerText(), /deny/);

    const big = await hold(madeKey, { tool_name: 'pay.send', arguments: { amount: 5000 } });
    assert.equal(big.status, 201, big.text);
    assert.equal(big.body.status, 'denied', big.text);
    const record = await call(t.url, 'GET', `/api/v1/holds/${big.body.id}`, { key: madeKey });
    assert.equal(record.body.decision.reason, 'Payments over 1000 go through finance');
    const small = await hold(madeKey, { tool_name: 'pay.send', arguments: { amount: 50 } });
    assert.equal(small.body.status, 'pending', 'the condition holds only above 1000');
  });

  test('a new tool is classified with its button, and its next call follows', async () => {
    assert.ok(madeKey, 'the key from the first test');
    const { page, errors } = opened;
    const first = await hold(madeKey, { tool_name: 'wire.transfer', arguments: { amount: 1 } });
    assert.equal(first.body.status, 'pending', 'a new tool waits for an admin');

    await page.goto('/app/admin/rules');
    const classify = page.locator('#classify');
    await classify.locator('code', { hasText: 'wire.transfer' }).waitFor();
    await classify.getByRole('button', { name: 'Deny wire.transfer' }).click();
    // The notice shows once the change has redirected back to the list.
    await page.getByText('Tool classified.').waitFor();
    assert.equal(await page.locator('#classify code', { hasText: 'wire.transfer' }).count(), 0);
    const listed = page.locator('#tools ~ section tr', { hasText: 'wire.transfer' });
    assert.match(await listed.innerText(), /deny/);

    const next = await hold(madeKey, { tool_name: 'wire.transfer', arguments: { amount: 1 } });
    assert.equal(next.body.status, 'denied', next.text);

    // Allowing a new tool asks first, and offers to approve the call of it that waits.
    const waiting = await hold(madeKey, { tool_name: 'ledger.pull', arguments: { month: '2026-10' } });
    await page.goto('/app/admin/rules');
    await page.locator('#classify').getByRole('button', { name: 'Allow ledger.pull' }).click();
    await page.getByRole('heading', { name: 'Allow ledger.pull?', level: 1 }).waitFor();
    await page.getByLabel(/Also approve the 1 call of it waiting now/).check();
    await page.getByRole('button', { name: 'Allow ledger.pull' }).click();
    await page.getByText('1 waiting hold approved.').waitFor();
    const decided = await call(t.url, 'GET', `/api/v1/holds/${waiting.body.id}`, { key: madeKey });
    assert.equal(decided.body.status, 'approved');
    assert.deepEqual(errors, [], 'no console errors on the admin pages');
  });
});
