/**
 * Accessibility: axe-core in headless Chromium on every page of the app (and the pages people reach
 * from a message: the decision link, sign-in, the status page), at desktop and phone widths, with a
 * realistic workspace. A serious or critical violation fails the test; the message names the rule, the
 * page and the elements. SQLite is enough: what is checked is the markup.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AxeBuilder } from '@axe-core/playwright';
import type { Browser } from 'playwright-core';
import { findHold } from '../src/store/holds.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { call, submission } from './support/http.ts';
import { appClient } from './support/app-client.ts';
import { oauthClient, REDIRECT_URI } from './support/oauth-client.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const DAY = 86_400_000;
const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin, time_zone: Europe/Berlin, quiet_hours: { from: '20:00', to: '07:00', weekends: true } }
  - email: bob@acme.test
    name: Bob Approver
    role: approver
    delegate: { to: admin@acme.test, from: '${new Date(Date.now() - DAY).toISOString()}', until: '${new Date(Date.now() + 7 * DAY).toISOString()}' }
groups: { finance: [admin@acme.test, bob@acme.test] }
mcp_servers:
  - { slug: github, name: GitHub, url: "http://127.0.0.1:9/mcp" }
tools:
  - { connection: SDK, tool: payments.send, classification: approval }
  - { connection: SDK, tool: read_balance, classification: allow }
rules:
  - name: Large payments need two approvers
    tool: "payments.*"
    when: [ { arg: amount, op: gt, value: 1000 } ]
    effect: approval
    approvers: [ "group:finance" ]
    approvals_required: 2
`;

const WIDTHS = [1280, 390];

/** Every page a signed-in admin can open, by path; holds are filled in once they exist. */
const APP_PAGES = [
  '/app/inbox',
  '/app/history',
  '/app/evidence',
  '/app/reports',
  '/app/widget',
  '/app/settings',
  '/app/settings/passkeys',
  '/app/admin/rules',
  '/app/admin/members',
  '/app/admin/members/bob%40acme.test',
  '/app/admin/keys',
  '/app/admin/mcp-servers',
  '/app/admin/mcp-servers/github',
  '/app/admin/webhook',
  '/app/admin/slack',
  '/app/admin/teams',
  '/app/admin/branding',
  '/app/admin/sign-in',
  '/app/admin/freeze',
];

// Each test has a time of its own: some twenty pages through axe take minutes on a busy machine.
describe('accessibility (axe-core)', { skip: browserSkip, concurrency: 1 }, () => {
  const slow = { timeout: 600_000 };
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;
  let key: string;
  const holds: string[] = [];

  before(async () => {
    [browser, t] = await Promise.all([
      launchBrowser(),
      // The MCP server's upstream is a loopback address nobody calls here.
      startTestService(sqlite, { env: { ALLOW_PRIVATE_TARGETS: 'true' } }),
    ]);
    ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
    // A client the admin allowed, for the keys page's connected clients.
    await oauthClient(t.url).connect(
      await appClient(t).signIn(workspace, 'admin@acme.test'),
      `${t.url}/mcp/${workspace.slug}/github`,
    );
    for (const [tool, amount] of [
      ['payments.send', 4200],
      ['payments.send', 120],
      ['send_invoice', 99],
      ['read_balance', 0],
    ] as const) {
      const { body } = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({
          tool_name: tool,
          arguments: { amount, currency: 'EUR', iban: 'DE89370400440532013000', memo: 'Invoice 2026-114' },
        }),
      });
      holds.push(body.id);
    }
    await decideAs(t, workspace.id, holds[1]!, 'approve', 'admin@acme.test', 'ok');
  });
  after(async () => {
    await closeBrowser(browser);
    await t?.close();
  });

  /** Serious and critical violations on the page as it is now, as lines a person can act on. */
  async function violations(opened: TestPage, where: string): Promise<string[]> {
    const result = await new AxeBuilder({ page: opened.page })
      .withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'])
      .analyze();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map(
        (v) =>
          `${where}: ${v.id} (${v.impact}) ${v.help}: ${v.nodes
            .slice(0, 3)
            .map((n) => n.target.join(' '))
            .join(', ')}`,
      );
  }

  async function signedIn(width: number): Promise<TestPage> {
    const opened = await openPage(browser, { baseURL: t.url, width, height: 900 });
    const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
    await opened.page.goto(url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
    return opened;
  }

  for (const width of WIDTHS) {
    test(`every app page at ${width} px has no serious or critical violation`, slow, async () => {
      const opened = await signedIn(width);
      try {
        const found: string[] = [];
        for (const path of [...APP_PAGES, `/app/holds/${holds[0]}`, `/app/holds/${holds[1]}`]) {
          const answer = await opened.page.goto(path);
          assert.equal(answer?.status(), 200, path);
          found.push(...(await violations(opened, `${path} @${width}`)));
        }
        // Where the header folds its navigation behind Menu, the menu opened; the keys dialog.
        await opened.page.goto('/app/inbox');
        if (width <= 960) {
          const menu = opened.page.getByText('Menu', { exact: true });
          await menu.click();
          found.push(...(await violations(opened, `inbox with the menu open @${width}`)));
          await menu.click();
        }
        await opened.page.getByRole('button', { name: 'Keyboard: ?' }).click();
        found.push(...(await violations(opened, `inbox with the keys dialog open @${width}`)));
        // A bulk decision's confirmation, reached from the list's selection.
        await opened.page.goto('/app/inbox');
        await opened.page.locator('ol.lines input.pick').first().check();
        await opened.page.getByRole('button', { name: 'Reject selected…' }).click();
        await opened.page.waitForURL('**/app/inbox/bulk');
        await opened.page.getByRole('heading', { name: /^Reject/ }).waitFor();
        found.push(...(await violations(opened, `bulk confirmation @${width}`)));
        // The OAuth consent page, reached as a client sends the browser there.
        const clientId = await oauthClient(t.url).register({ client_name: 'Claude' });
        const authorize = new URLSearchParams({
          response_type: 'code',
          client_id: clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          resource: `${t.url}/mcp/${workspace.slug}/github`,
        });
        await opened.page.goto(`/oauth/authorize?${authorize}`);
        await opened.page.getByRole('heading', { name: 'Allow Claude?' }).waitFor();
        found.push(...(await violations(opened, `consent page @${width}`)));
        assert.deepEqual(found, []);
      } finally {
        await opened.close();
      }
    });

    test(
      `the decision link, sign-in and status pages at ${width} px have no serious or critical violation`,
      slow,
      async () => {
        const opened = await openPage(browser, { baseURL: t.url, width, height: 900 });
        try {
          const hold = (await findHold(t.service.ctx.db, workspace.id, holds[0]!))!;
          const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'bob@acme.test'))!;
          const link = await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' });
          const found: string[] = [];
          for (const [path, name] of [
            [link, 'decision link'],
            ['/app/login', 'sign-in'],
            [`/a/${holds[0]}`, 'status page'],
          ] as const) {
            await opened.page.goto(path);
            found.push(...(await violations(opened, `${name} @${width}`)));
          }
          assert.deepEqual(found, []);
        } finally {
          await opened.close();
        }
      },
    );
  }
});
