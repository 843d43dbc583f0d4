/**
 * The app's header for an admin (the longest navigation) in Chromium: at most two rows at every width
 * from a phone's to a desk's (issue 39: "On a phone: the admin header takes at most two rows").
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { inviteLink } from '../src/services/sign-in.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage, type TestPage } from './support/browser.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
`;

const WIDTHS = [390, 600, 961, 1024, 1100, 1240, 1280];

describe('the admin header in a browser', { skip: browserSkip }, () => {
  let browser: Browser;
  let t: TestService;
  let workspace: Workspace;
  let opened: TestPage;

  before(async () => {
    [browser, t] = await Promise.all([launchBrowser(), startTestService(sqlite)]);
    ({ workspace } = await t.workspace({ config: WORKSPACE }));
    opened = await openPage(browser, { baseURL: t.url });
    await opened.page.goto((await inviteLink(t.service.ctx, workspace, 'admin@acme.test')).url);
    await opened.page.getByRole('button', { name: 'Continue to approvals' }).click();
    await opened.page.waitForURL('**/app/inbox');
  });
  after(async () => {
    await opened?.close();
    await closeBrowser(browser);
    await t?.close();
  });

  /**
   * The header's rows: its links and controls grouped into lines (a piece below the middle of its line's
   * first piece starts the next one). The brand, centred beside them, adds a row only when it sits above.
   */
  const headerRows = () =>
    opened.page.locator('header.top').evaluate((header) => {
      const visible = (selector: string) =>
        [...header.querySelectorAll(selector)]
          .map((piece) => piece.getBoundingClientRect())
          .filter((box) => box.width > 0 && box.height > 0);
      const pieces = visible('nav li, .who, .signout button, summary').sort((a, b) => a.top - b.top);
      let rows = 0;
      let middle = -Infinity;
      for (const box of pieces) {
        if (box.top < middle) continue;
        rows++;
        middle = box.top + box.height / 2;
      }
      const [brand] = visible('.brand');
      return rows + (brand && brand.bottom <= pieces[0]!.top ? 1 : 0);
    });

  for (const width of WIDTHS) {
    test(`at ${width} px the admin header takes at most two rows`, async () => {
      const { page } = opened;
      await page.setViewportSize({ width, height: 900 });
      await page.goto('/app/admin/rules');
      const rows = await headerRows();
      const { height } = (await page.locator('header.top').boundingBox())!;
      assert.ok(rows <= 2, `${rows} rows (${height} px)`);
      assert.ok(height < 100, `${height} px`);
    });
  }
});
