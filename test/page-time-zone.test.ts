/**
 * Issue 39: times on a page follow one zone. The page names the reader's saved time zone, which
 * static/time.js shows every time in (else the browser's; test/decision-link.e2e.test.ts watches that
 * in Chromium); a member without one gets no zone named.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Ada, role: admin, time_zone: Asia/Kolkata }
  - { email: bob@acme.test, name: Bob, role: approver }
`;

for (const backend of backends) {
  describe(`the page's time zone (${backend.name})`, { skip: backend.skip }, () => {
    let t: TestService;
    const client = appClient(() => t);
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    test("every page names the reader's saved time zone, and none without one", async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const ada = await client.signIn(workspace, 'admin@acme.test');
      for (const path of ['/app/inbox', '/app/history', '/app/settings']) {
        const page = await client.get(ada, path);
        assert.equal(page.status, 200);
        assert.match(page.text, /<body[^>]* data-time-zone="Asia\/Kolkata"/, path);
      }
      const bob = await client.signIn(workspace, 'bob@acme.test');
      assert.doesNotMatch((await client.get(bob, '/app/inbox')).text, /data-time-zone/);
    });
  });
}
