/**
 * Issue 37, part 2: an admin cannot act as another member through a sign-in link. Tried as an attacker
 * would, an admin of the same workspace: once a member has signed in, Members → Invite sends the link to
 * that member's own e-mail and shows it to nobody; a first invitation may still be shown. Every link made
 * (app, sign-in form, `approvals users invite`) is evidenced: who asked, for whom, how it was delivered.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';
import { until } from './support/wait.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: carol@acme.test, name: Carol, role: approver }
  - { email: dave@acme.test, name: Dave, role: approver }
`;

const LINK = /\/app\/login\/[A-Za-z0-9_-]{20,}/;

for (const backend of backends) {
  describe(`sign-in links on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let smtp: TestSmtp;
    let workspace: Workspace;
    let admin: Session;
    const app = appClient(() => t);

    const links = (memberEmail: string) =>
      t.service.ctx.db
        .all<{ data: string }>(
          `SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'member.sign_in_link' ORDER BY seq`,
          [workspace.id],
        )
        .then((rows) =>
          rows
            .map((row) => JSON.parse(row.data) as Record<string, any>)
            .filter((data) => data.member.email === memberEmail),
        );
    const tokens = async (memberEmail: string) =>
      Number(
        (
          await t.service.ctx.db.one<{ n: number }>(
            `SELECT COUNT(*) AS n FROM login_tokens l JOIN members m ON m.id = l.member_id
             WHERE m.workspace_id = $1 AND m.email = $2`,
            [workspace.id, memberEmail],
          )
        )?.n,
      );
    const useLink = async (url: string) => {
      const used = await fetch(t.url + new URL(url).pathname, { method: 'POST', redirect: 'manual' });
      assert.equal(used.status, 303);
      return used.headers.get('set-cookie')?.match(/approvals_session=([^;]+)/)?.[1];
    };

    before(async () => {
      smtp = await startSmtp();
      t = await startTestService(backend, { env: smtp.env });
      ({ workspace } = await t.workspace({ config: CONFIG }));
      admin = await app.signIn(workspace, 'admin@acme.test');
    });
    after(async () => {
      await t?.close();
      await smtp?.close();
    });

    test('a first invitation is shown to the admin, and evidenced as shown', async () => {
      const made = await app.post(admin, '/app/admin/members/bob%40acme.test/invite', {});
      assert.equal(made.status, 200);
      const url = made.text.match(/<p class="secret" id="invite-link">([^<]+)<\/p>/)?.[1];
      assert.ok(url, 'the first invitation is on the page');
      const entry = (await links('bob@acme.test'))[0]!;
      assert.equal(entry.delivery, 'shown');
      assert.equal(entry.requested_by.email, 'admin@acme.test');
      assert.ok(Date.parse(entry.expires_at) > t.clock.now());
      assert.ok(await useLink(url), 'Bob signs in with it');
    });

    test('an admin cannot get a sign-in link for a member who has signed in: it goes to their e-mail', async () => {
      // Bob signed in (above). The admin tries again, as an attacker would, in every spelling.
      const before = await tokens('bob@acme.test');
      for (const email of ['bob@acme.test', 'BOB@acme.test', ' bob@acme.test ']) {
        const made = await app.post(admin, `/app/admin/members/${encodeURIComponent(email)}/invite`, {});
        assert.equal(made.status, 200, made.text.slice(0, 500));
        assert.ok(!LINK.test(made.text), 'no link on the page');
        assert.match(made.text, /Sign-in link sent to/);
        const mail = await smtp.next('bob@acme.test');
        const link = mail.links.find((u) => LINK.test(u));
        assert.ok(link, 'the link is in the mail to Bob');
        assert.match(mail.body, /Admin \(admin@acme\.test\) asked for a sign-in link/);
      }
      assert.equal(await tokens('bob@acme.test'), before + 3);
      // Nothing the admin can see afterwards holds it: the members page, the evidence page.
      for (const path of ['/app/admin/members', '/app/evidence']) {
        assert.doesNotMatch((await app.get(admin, path)).text, LINK, path);
      }
      const entries = (await links('bob@acme.test')).slice(1);
      assert.equal(entries.length, 3);
      for (const entry of entries) {
        assert.equal(entry.delivery, 'email');
        assert.deepEqual(entry.requested_by.email, 'admin@acme.test');
      }
      // Only Bob's mailbox got them; the admin got nothing.
      assert.equal(smtp.messagesTo('admin@acme.test').length, 0);
    });

    test('the sign-in form and the operator command are evidenced too', async () => {
      const asked = await fetch(`${t.url}/app/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=carol%40acme.test',
      });
      assert.equal(asked.status, 200);
      await smtp.next('carol@acme.test');
      await until(
        'the link of the sign-in form to be evidenced',
        async () => (await links('carol@acme.test')).length === 1 || undefined,
      );
      const mailed = (await links('carol@acme.test'))[0]!;
      assert.equal(mailed.requested_by, 'member');
      assert.equal(mailed.delivery, 'email');

      const printed = await approvals(t.storage, [
        'users',
        'invite',
        '--workspace',
        workspace.slug,
        '--email',
        'dave@acme.test',
      ]);
      assert.equal(printed.code, 0, printed.stderr);
      assert.match(printed.stdout, LINK, 'the operator on the server may still print one');
      const entry = (await links('dave@acme.test'))[0]!;
      assert.equal(entry.requested_by, 'operator');
      assert.equal(entry.delivery, 'printed');
    });

    test('without e-mail, an admin invite of a member who signed in is refused and makes nothing', async (tc) => {
      const bare = await startTestService(backend);
      tc.after(() => bare.close());
      const { workspace: ws } = await bare.workspace({ config: CONFIG });
      const client = appClient(bare);
      const boss = await client.signIn(ws, 'admin@acme.test');
      await client.signIn(ws, 'bob@acme.test');
      const count = async () =>
        Number(
          (
            await bare.service.ctx.db.one<{ n: number }>(
              'SELECT COUNT(*) AS n FROM evidence WHERE workspace_id = $1',
              [ws.id],
            )
          )?.n,
        );
      const before = await count();
      const refused = await client.post(boss, '/app/admin/members/bob%40acme.test/invite', {});
      assert.equal(refused.status, 409);
      assert.doesNotMatch(refused.text, LINK);
      assert.match(refused.text, /only to their own e-mail/);
      assert.equal(await count(), before, 'no link, no entry');
    });
  });
}
