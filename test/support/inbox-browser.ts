/** The inbox's browser suites' set-up: a member signed in to the inbox in Chromium, and payments waiting. */
import type { Browser } from 'playwright-core';
import { inviteLink } from '../../src/services/sign-in.ts';
import type { Workspace } from '../../src/store/workspaces.ts';
import { openPage, type TestPage } from './browser.ts';
import { seedHolds } from './seed.ts';
import type { TestService } from './service.ts';

/**
 * A fresh page `width` px wide signed in as `email` through an invite link, on the inbox with its live
 * updates connected. A phone's width (640 px or less) gets a touch screen.
 */
export async function signedInToInbox(
  browser: Browser,
  t: TestService,
  workspace: Workspace,
  { email = 'admin@acme.test', width = 1280 }: { email?: string; width?: number } = {},
): Promise<TestPage> {
  const opened = await openPage(browser, { baseURL: t.url, width, height: 900, hasTouch: width <= 640 });
  const { url } = await inviteLink(t.service.ctx, workspace, email);
  await opened.page.goto(url);
  await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
  await opened.page.waitForURL('**/app/inbox');
  await opened.page.locator('body[data-live="connected"]').waitFor({ state: 'attached' });
  return opened;
}

/**
 * `count` payments to `pay`, one second apart so the deadline order is the order of submission, each
 * with a memo before its deciding values: `{ memo: 'Invoice 3', amount: 1203, currency: 'EUR', payee: 'Supplier 3' }`.
 */
export const seedPayments = (t: TestService, workspace: Workspace, count: number) =>
  seedHolds(t.service.ctx, workspace, count, (i) => {
    t.clock.advance(1_000);
    return {
      toolName: 'pay',
      arguments: { memo: `Invoice ${i}`, amount: 1200 + i, currency: 'EUR', payee: `Supplier ${i}` },
    };
  });
