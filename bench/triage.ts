/**
 * Triage at scale (issue 39), part of the inbox benchmark, on SQLite and (with TEST_DATABASE_URL)
 * PostgreSQL, each against a real service on a clock this process moves:
 * - the floor of the times: `GET /healthz` of the same service, one request at a time;
 * - keyboard decisions: 10 holds decided with the keys alone (`a`, then Enter in the confirmation) in
 *   headless Chromium, each from the key to its line leaving the list; the keystrokes it took and the
 *   page loads it caused (none: a decision is made in place);
 * - bulk approval of 100 holds through the app's form (the confirmation, then the decisions): its time,
 *   and the evidence entries it added per hold (one each);
 * - the mails of an escalation wave: 100 holds escalate to one member within a minute; the e-mails she
 *   gets with the default digest window (one digest: e-mail is her one channel), against one per hold
 *   when digests are off (the floor); either way a decision link for each hold.
 * The service runs in this process (the clock is moved here); Chromium in its own. Every figure is
 * checked: a decision that does not happen, a page load, or a count other than expected fails the
 * figure (listed as skipped with the reason, exit code 1), never a fast answer.
 */
import type { Browser, Page } from 'playwright-core';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields } from '../test/support/app-client.ts';
import type { Backend } from '../test/support/backends.ts';
import { closeBrowser, launchBrowser, openPage } from '../test/support/browser.ts';
import { seedHolds } from '../test/support/seed.ts';
import { escalationWaveMails } from '../test/support/escalation-wave.ts';
import { startTestService, type TestService } from '../test/support/service.ts';
import { compared, type Figure, percentile, sample } from './lib.ts';

const KEYBOARD_HOLDS = 10;
const BULK_HOLDS = 100;
const WAVE_HOLDS = 100;
const MIN = 60_000;

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
tools:
  - { connection: SDK, tool: payments.send, classification: approval }
rules:
  - { name: Payments, tool: payments.send, effect: approval, approvers: [admin@acme.test],
      when: [{ arg: amount, op: gt, value: 100 }], timeout_minutes: 240,
      escalate: [{ after: 1h, to: [ann@acme.test] }] }
`;

const payment = (i: number) => ({
  toolName: 'payments.send',
  arguments: {
    memo: `Invoice INV-2026-${String(i).padStart(5, '0')}, net 30`,
    amount: 1000 + i,
    currency: 'EUR',
    payee: ['Globex Ltd', 'Initech BV', 'Northwind Traders'][i % 3],
  },
});

export interface TriageOutcome {
  figures: Figure[];
  failed: { figure: string; reason: string }[];
}

type Make = (label: string, value: number, unit: string, note?: string) => Figure;

/** The floor of the triage times: `GET /healthz` of the same service, one at a time over loopback. */
async function healthzFloor(t: TestService, figure: Make): Promise<Figure> {
  const { samples } = await sample(
    async () => {
      const answer = await fetch(`${t.url}/healthz`);
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`bench: /healthz answered ${answer.status}`);
    },
    { warmup: 50, count: 300, budgetMs: 5000 },
  );
  return figure(
    'GET /healthz of the triage service, p50',
    percentile(samples, 50) / 1000,
    'ms',
    `${samples.length} requests one at a time (fetch, kept-alive connection) to the service the keyboard and bulk figures use, in this process; their floor`,
  );
}

/** Signs Ada in, in a page of its own, on the inbox. */
async function signedInPage(browser: Browser, t: TestService, workspace: Workspace): Promise<Page> {
  const { page } = await openPage(browser, { width: 1280, height: 900 });
  const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
  await page.goto(url);
  await page.getByRole('button', { name: 'Continue to approvals' }).click();
  await page.waitForURL('**/app/inbox');
  await page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
  return page;
}

async function keyboard(name: string, t: TestService, figure: Make, floor: Figure, out: TriageOutcome) {
  const label = `keyboard decisions of ${KEYBOARD_HOLDS} holds`;
  const { workspace } = await t.workspace({ config: WORKSPACE });
  const ids = await seedHolds(t.service.ctx, workspace, KEYBOARD_HOLDS, payment);
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    const page = await signedInPage(browser, t, workspace);
    await page.evaluate(() => Object.assign(window, { triageMark: true }));
    await page.locator(`#line-${ids[0]} > a`).focus();
    const times: number[] = [];
    let keystrokes = 0;
    for (let decided = 0; decided < ids.length; decided++) {
      const focused = await page.evaluate(() => document.activeElement?.closest('li')?.dataset.hold);
      if (!focused) throw new Error('no line has the focus');
      const start = performance.now();
      await page.keyboard.press('a');
      await page.getByRole('dialog', { name: 'Approve this action?' }).waitFor();
      await page.keyboard.press('Enter');
      keystrokes += 2;
      await page.locator(`#line-${focused}`).waitFor({ state: 'detached' });
      times.push(performance.now() - start);
      if (!ids.includes(focused)) throw new Error('the focus is on a hold this bench did not seed');
    }
    const samePage = await page.evaluate(() => 'triageMark' in window);
    const statuses = await t.service.ctx.db.all<{ status: string }>(
      `SELECT status FROM holds WHERE workspace_id = $1`,
      [workspace.id],
    );
    const approved = statuses.filter((row) => row.status === 'approved').length;
    if (!samePage) throw new Error('a page was loaded');
    if (approved !== KEYBOARD_HOLDS) throw new Error(`${approved} of ${KEYBOARD_HOLDS} holds approved`);
    out.figures.push(
      compared(
        figure(
          `${label}, time per decision p50`,
          percentile(times, 50),
          'ms',
          `from the key a to the line leaving the list (the confirmation's Enter and the decision in place), headless Chromium at 1280 px; ${KEYBOARD_HOLDS} payments, each the focused line`,
        ),
        floor,
      ),
      figure(`${label}, time per decision max`, percentile(times, 100), 'ms'),
      figure(`${label}, keystrokes per decision`, keystrokes / KEYBOARD_HOLDS, 'keys'),
    );
  } catch (error) {
    out.failed.push({ figure: `${name}: ${label}`, reason: `FAILED: ${(error as Error).message}` });
  } finally {
    await closeBrowser(browser);
  }
}

async function bulk(name: string, t: TestService, figure: Make, floor: Figure, out: TriageOutcome) {
  const label = `bulk approval of ${BULK_HOLDS} holds`;
  try {
    const { workspace } = await t.workspace({ config: WORKSPACE });
    const ids = await seedHolds(t.service.ctx, workspace, BULK_HOLDS, payment);
    const app = appClient(t);
    await t.clock.advance(MIN);
    const ada = await app.signIn(workspace, 'admin@acme.test');
    const entries = async () =>
      Number(
        (await t.service.ctx.db.one<{ n: number }>(
          'SELECT count(*) AS n FROM evidence WHERE workspace_id = $1',
          [workspace.id],
        ))!.n,
      );
    const before = await entries();
    const start = performance.now();
    const confirm = await app.post(ada, '/app/inbox/bulk', {
      hold: ids,
      verdict: 'approve',
      back: '/app/inbox',
    });
    const confirmed = performance.now();
    if (confirm.status !== 200) throw new Error(`the confirmation answered ${confirm.status}`);
    const decided = await app.post(ada, '/app/inbox/bulk', formFields(confirm.text, '/app/inbox/bulk'));
    const end = performance.now();
    if (decided.notice !== `bulk_approved:${BULK_HOLDS}:0`)
      throw new Error(`the decision said ${decided.notice ?? `status ${decided.status}`}`);
    const added = (await entries()) - before;
    if (added !== BULK_HOLDS) throw new Error(`${added} evidence entries for ${BULK_HOLDS} holds`);
    const perHold = figure(
      `${label}, decisions, per hold`,
      (end - confirmed) / BULK_HOLDS,
      'ms',
      `the confirmed form's POST: one decision and one evidence entry per hold, each in its own transaction; the confirmation page took ${(confirmed - start).toFixed(0)} ms`,
    );
    out.figures.push(
      compared(
        figure(`${label}, total`, end - start, 'ms', 'the confirmation page and the confirmed decisions'),
        floor,
      ),
      compared(perHold, floor),
      figure(`${label}, evidence entries per hold`, added / BULK_HOLDS, 'entries'),
    );
  } catch (error) {
    out.failed.push({ figure: `${name}: ${label}`, reason: `FAILED: ${(error as Error).message}` });
  }
}

async function wave(name: string, backend: Backend, figure: Make, out: TriageOutcome) {
  const label = `e-mails for an escalation wave of ${WAVE_HOLDS} holds to one member`;
  try {
    const off = await escalationWaveMails(backend, { holds: WAVE_HOLDS, digestMinutes: 0 });
    const on = await escalationWaveMails(backend, { holds: WAVE_HOLDS });
    // Every hold reaches her either way, each with its own decision link; e-mail is her one channel.
    for (const [way, counted] of Object.entries({ 'with digests off': off, 'with the default window': on }))
      if (counted.links !== WAVE_HOLDS)
        throw new Error(`${way}, ${counted.links} decision links for ${WAVE_HOLDS} holds`);
    if (off.mails !== WAVE_HOLDS)
      throw new Error(`with digests off, ${off.mails} e-mails for ${WAVE_HOLDS} holds`);
    if (on.mails !== 1)
      throw new Error(
        `with the default window, ${on.mails} e-mails (one digest on her one channel expected)`,
      );
    const floor = figure(
      `${label}, digests off`,
      off.mails,
      'mails',
      'digest_minutes: 0: one e-mail per hold',
    );
    out.figures.push(
      floor,
      compared(
        figure(
          `${label}, default digest window`,
          on.mails,
          'mails',
          `the default window (5 minutes): one digest per channel per window (her one channel is e-mail), with a decision link for each of the ${WAVE_HOLDS} holds`,
        ),
        floor,
      ),
    );
  } catch (error) {
    out.failed.push({ figure: `${name}: ${label}`, reason: `FAILED: ${(error as Error).message}` });
  }
}

export async function triage(name: string, backend: Backend): Promise<TriageOutcome> {
  const out: TriageOutcome = { figures: [], failed: [] };
  const figure: Make = (label, value, unit, note) => ({
    bench: 'inbox',
    figure: `${name}: ${label}`,
    value,
    unit,
    ...(note && { note }),
  });
  const t = await startTestService(backend, { env: { APP_RATE_LIMIT: '0' } });
  try {
    const floor = await healthzFloor(t, figure);
    out.figures.push(floor);
    await keyboard(name, t, figure, floor, out);
    await bulk(name, t, figure, floor, out);
  } finally {
    await t.close();
  }
  await wave(name, backend, figure, out);
  return out;
}
