/**
 * Issue 37, "an admin cannot act as another member", the two holes a red team found after it:
 *
 * 1. Channel rebinding: an admin edits an approver's phone (or Slack / Teams user id) to her own, and
 *    the approver's decision links and reply codes reach her. Once a member has acted, only they change
 *    their delivery addresses; an admin, the workspace file (`approvals apply`) and the workspace API are
 *    refused with a field error. Every change of an address is evidenced with before and after, and the
 *    member is told by e-mail when someone else made it.
 * 2. "Has signed in" was too narrow: a member who decided only through a decision link, Slack, Teams or
 *    SMS had never opened a session, so an admin was still shown a first invitation for them. Any use of
 *    a credential of theirs counts now.
 *
 * Tried as the attacker would, an admin of the same workspace, on both backends.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createApiKey } from '../src/services/api-keys.ts';
import { decideFromSlack } from '../src/services/channel-decisions.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, lastEvidence, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';
import { startSmtp, type TestSmtp } from './support/smtp.ts';

// Requests go at once (no digest window): the tests follow single mails.
const CONFIG = `notifications: { digest_minutes: 0 }
members:
  - { email: alice@acme.test, name: Alice, role: admin, phone: '+15550199' }
  - { email: bob@acme.test, name: Bob, role: approver, phone: '+15550100', slack_user_id: U0BOB, teams_user_id: 00000000-0000-0000-0000-0000000000b0, channels: [email] }
  - { email: carol@acme.test, name: Carol, role: approver, slack_user_id: U0CAROL, channels: [email, slack] }
  - { email: dan@acme.test, name: Dan, role: approver }
rules:
  - { name: Bob pays, tool: pay, effect: approval, approvers: [bob@acme.test] }
  - { name: Carol pays, tool: refund, effect: approval, approvers: [carol@acme.test] }
`;

const LINK = /\/app\/login\/[A-Za-z0-9_-]{20,}/;
const ALICE_TEAMS = '00000000-0000-0000-0000-0000000000a1';
const dir = mkdtempSync(join(tmpdir(), 'member-addresses-'));

for (const backend of backends) {
  describe(
    `a member's addresses are theirs once they acted (${backend.name})`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let smtp: TestSmtp;
      let workspace: Workspace;
      let key: string;
      let adminKey: string;
      let alice: Session;
      const app = appClient(() => t);

      /** The next mail to `address` whose subject matches (others, like the addresses set at first, skipped). */
      const nextMail = async (address: string, subject: RegExp) => {
        for (;;) {
          const mail = await smtp.next(address);
          if (subject.test(mail.subject)) return mail;
        }
      };
      const stored = async (email: string) =>
        (await findMemberByEmail(t.service.ctx.db, workspace.id, email))!;
      const hold = async (tool: string) => {
        const made = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: tool, arguments: { amount: 250000 } }),
        });
        assert.equal(made.status, 201, JSON.stringify(made.body));
        return made.body.id as string;
      };
      const evidenceCount = async () =>
        Number(
          (await t.service.ctx.db.one<{ n: number }>(
            'SELECT COUNT(*) AS n FROM evidence WHERE workspace_id = $1',
            [workspace.id],
          ))!.n,
        );
      const editBob = (fields: Record<string, string | string[]>) =>
        app.post(alice, '/app/admin/members/bob%40acme.test', {
          name: 'Bob',
          role: 'approver',
          phone: '+15550100',
          slack_user_id: 'U0BOB',
          teams_user_id: '00000000-0000-0000-0000-0000000000b0',
          channels: ['email'],
          ...fields,
        });
      const exported = async () => {
        const answer = await call(t.url, 'GET', '/api/v1/workspace/config', { key: adminKey });
        assert.equal(answer.status, 200);
        return answer.body as { members: Record<string, unknown>[] };
      };
      const withBob = (config: { members: Record<string, unknown>[] }, change: Record<string, unknown>) => ({
        ...config,
        members: config.members.map((m) => (m.email === 'bob@acme.test' ? { ...m, ...change } : m)),
      });

      before(async () => {
        smtp = await startSmtp();
        t = await startTestService(backend, { env: smtp.env });
        ({ workspace, key } = await t.workspace({ config: CONFIG }));
        adminKey = (await createApiKey(t.service.ctx, { workspace, env: 'live', scope: 'admin', name: 'CI' }))
          .key;
        alice = await app.signIn(workspace, 'alice@acme.test');
      });
      after(async () => {
        await t?.close();
        await smtp?.close();
      });

      test('a member who decided only through an e-mailed decision link gets no shown sign-in link', async () => {
        await hold('pay');
        const request = await nextMail('bob@acme.test', /^Approve pay 250,000 — Bob pays$/);
        const link = request.links.find((url) => url.startsWith(`${t.url}/d/`));
        assert.ok(link, 'Bob is asked by e-mail with his decision link');
        const decided = await fetch(link, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'verdict=approve',
          redirect: 'manual',
        });
        assert.ok(decided.status < 400, `the link decides (${decided.status})`);
        // Bob never opened an app session. Alice asks for a sign-in link for him.
        const made = await app.post(alice, '/app/admin/members/bob%40acme.test/invite', {});
        assert.equal(made.status, 200, made.text.slice(0, 500));
        assert.doesNotMatch(made.text, LINK, 'no link on the admin page');
        assert.match(made.text, /Sign-in link sent to/);
        const mail = await nextMail('bob@acme.test', /sign-in link/);
        assert.ok(
          mail.links.some((url) => LINK.test(url)),
          'the link went to Bob',
        );
        assert.equal((await lastEvidence(t, workspace)).data.delivery, 'email');
      });

      test('a member who decided only through Slack gets no shown sign-in link either', async () => {
        const id = await hold('refund');
        const pressed = await decideFromSlack(t.service.ctx, {
          slackUserId: 'U0CAROL',
          holdId: id,
          verdict: 'reject',
          replayKey: 'carol-1',
        });
        assert.equal(pressed.outcome, 'recorded');
        const made = await app.post(alice, '/app/admin/members/carol%40acme.test/invite', {});
        assert.equal(made.status, 200, made.text.slice(0, 500));
        assert.doesNotMatch(made.text, LINK);
        await nextMail('carol@acme.test', /sign-in link/);
      });

      test('migration 032 counts the decisions made before it: a member who only decided has acted', async () => {
        // As a database migrated before 032 had it: Carol decided (above), with no session on record.
        const acted = async () =>
          (
            await t.service.ctx.db.one<{ at: number | null }>(
              'SELECT acted_at AS at FROM members WHERE workspace_id = $1 AND email = $2',
              [workspace.id, 'carol@acme.test'],
            )
          )?.at ?? null;
        await t.service.ctx.db.run('UPDATE members SET acted_at = NULL WHERE workspace_id = $1', [
          workspace.id,
        ]);
        const migration = readFileSync(
          new URL('../src/store/migrations/032_member_acted.sql', import.meta.url),
          'utf8',
        );
        await t.service.ctx.db.exec(migration.slice(migration.indexOf('UPDATE members')));
        assert.notEqual(await acted(), null);
        const made = await app.post(alice, '/app/admin/members/carol%40acme.test/invite', {});
        assert.doesNotMatch(made.text, LINK);
        await nextMail('carol@acme.test', /sign-in link/);
      });

      test('the Members page refuses to point the phone, Slack or Teams id of a member who acted elsewhere', async () => {
        const before = await evidenceCount();
        for (const [name, value] of [
          ['phone', '+15550199'],
          ['slack_user_id', 'U0ALICE'],
          ['teams_user_id', ALICE_TEAMS],
        ] as const) {
          const channel = { phone: 'sms', slack_user_id: 'slack', teams_user_id: 'teams' }[name];
          const refused = await editBob({ [name]: value, channels: ['email', channel] });
          assert.equal(refused.status, 422, `${name}: ${refused.text.slice(0, 300)}`);
          assert.match(refused.text, /only Bob can change/, name);
          assert.match(refused.text, /their own Settings page/, name);
        }
        // A change Bob's own addresses do not take part in still goes through, unchanged values kept.
        const renamed = await editBob({ name: 'Bob Meyer' });
        assert.equal(renamed.status, 303, renamed.text.slice(0, 300));
        const bob = await stored('bob@acme.test');
        assert.equal(bob.phone, '+15550100');
        assert.equal(bob.slackUserId, 'U0BOB');
        assert.equal(bob.teamsUserId, '00000000-0000-0000-0000-0000000000b0');
        assert.equal(await evidenceCount(), before + 1, 'only the rename is in the evidence');
      });

      test('the workspace API and the file through approvals apply refuse the same', async () => {
        const before = await evidenceCount();
        const config = await exported();
        const put = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: withBob(config, { phone: '+15550199', channels: ['email', 'sms'] }),
        });
        assert.equal(put.status, 422, JSON.stringify(put.body));
        assert.match(JSON.stringify(put.body), /members\.1\.phone/);
        assert.match(JSON.stringify(put.body), /only Bob Meyer can change/);
        const file = join(dir, `rebind-${backend.name}.json`);
        writeFileSync(file, JSON.stringify(withBob(config, { slack_user_id: 'U0ALICE' })));
        const applied = await approvals(t.storage, ['apply', '--workspace', workspace.slug, '-f', file]);
        assert.notEqual(applied.code, 0);
        assert.match(applied.stderr + applied.stdout, /members\.1\.slack_user_id/);
        // The Teams id is kept in lower case: the same id in capitals is no change, another one is.
        const same = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: withBob(config, { teams_user_id: '00000000-0000-0000-0000-0000000000B0' }),
        });
        assert.equal(same.status, 200, JSON.stringify(same.body));
        const other = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: withBob(config, { teams_user_id: ALICE_TEAMS.toUpperCase() }),
        });
        assert.equal(other.status, 422);
        // Removing Bob and declaring him again with Alice's number is the same change.
        const without = { ...config, members: config.members.filter((m) => m.email !== 'bob@acme.test') };
        const rules = (config as unknown as { rules: { name: string }[] }).rules.filter(
          (r) => r.name !== 'Bob pays',
        );
        const removed = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: { ...without, rules },
        });
        assert.equal(removed.status, 200, JSON.stringify(removed.body));
        const back = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: withBob({ ...config, rules } as never, { phone: '+15550199' }),
        });
        assert.equal(back.status, 422, JSON.stringify(back.body));
        const restored = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: config,
        });
        assert.equal(restored.status, 200, JSON.stringify(restored.body));
        assert.equal((await stored('bob@acme.test')).phone, '+15550100');
        assert.ok((await evidenceCount()) >= before);
      });

      test('an exported file applies back unchanged, through apply and the API', async () => {
        const exportedFile = await approvals(t.storage, ['export', '--workspace', workspace.slug]);
        assert.equal(exportedFile.code, 0, exportedFile.stderr);
        const file = join(dir, `round-trip-${backend.name}.yaml`);
        writeFileSync(file, exportedFile.stdout);
        const applied = await approvals(t.storage, ['apply', '--workspace', workspace.slug, '-f', file]);
        assert.equal(applied.code, 0, applied.stderr);
        const put = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: await exported(),
        });
        assert.equal(put.status, 200, JSON.stringify(put.body));
        assert.deepEqual(put.body.items_changed, []);
      });

      test('an admin still provisions a member who has not acted; the change is evidenced and the member told', async () => {
        const edited = await app.post(alice, '/app/admin/members/dan%40acme.test', {
          name: 'Dan',
          role: 'approver',
          phone: '+15550123',
          slack_user_id: 'U0DAN',
          channels: ['email', 'sms', 'slack'],
        });
        assert.equal(edited.status, 303, edited.text.slice(0, 300));
        const dan = await stored('dan@acme.test');
        assert.equal(dan.phone, '+15550123');
        const entry = await lastEvidence(t, workspace);
        assert.equal(entry.type, 'config.applied');
        assert.deepEqual(entry.data.addresses, [
          { member: 'dan@acme.test', field: 'phone', from: null, to: '+15550123' },
          { member: 'dan@acme.test', field: 'slack_user_id', from: null, to: 'U0DAN' },
        ]);
        const mail = await nextMail('dan@acme.test', /addresses/);
        assert.match(mail.subject, /addresses/);
        assert.match(mail.body, /Alice \(alice@acme\.test\)/);
        assert.match(mail.body, /\+15550123/);
        assert.match(mail.body, /U0DAN/);
        // A new member's addresses are evidenced the same way; nobody has written to them before, so no mail.
        const config = await exported();
        const put = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: {
            ...config,
            members: [
              ...config.members,
              { email: 'erin@acme.test', name: 'Erin', role: 'viewer', phone: '+15550124' },
            ],
          },
        });
        assert.equal(put.status, 200, JSON.stringify(put.body));
        const added = await lastEvidence(t, workspace);
        assert.deepEqual(added.data.addresses, [
          { member: 'erin@acme.test', field: 'phone', from: null, to: '+15550124' },
        ]);
        await t.settled();
        assert.equal(smtp.messagesTo('erin@acme.test').length, 0);
        // Told to an existing member, the mail names the key that made the change.
        const config2 = await exported();
        const phoned = await call(t.url, 'PUT', '/api/v1/workspace/config', {
          key: adminKey,
          body: {
            ...config2,
            members: config2.members.map((m) =>
              m.email === 'erin@acme.test' ? { ...m, phone: '+15550125' } : m,
            ),
          },
        });
        assert.equal(phoned.status, 200, JSON.stringify(phoned.body));
        assert.match((await nextMail('erin@acme.test', /addresses/)).body, /API key .* \(CI\)/);
      });

      test('a member changes their own addresses on Settings; evidenced, and no mail since they made it', async () => {
        const bob = await app.signIn(workspace, 'bob@acme.test');
        const page = await app.get(bob, '/app/settings');
        assert.match(page.text, /name="phone"/);
        const mailsBefore = smtp.messagesTo('bob@acme.test').length;
        const saved = await app.post(bob, '/app/settings', {
          phone: '+15550177',
          slack_user_id: 'U0BOB2',
          teams_user_id: '00000000-0000-0000-0000-0000000000b0',
          time_zone: '',
          quiet_from: '',
          quiet_to: '',
          delegate_to: '',
          delegate_from: '',
          delegate_until: '',
        });
        assert.equal(saved.status, 303, saved.text.slice(0, 500));
        const now = await stored('bob@acme.test');
        assert.equal(now.phone, '+15550177');
        assert.equal(now.slackUserId, 'U0BOB2');
        const entry = await lastEvidence(t, workspace);
        assert.deepEqual(entry.data.addresses, [
          { member: 'bob@acme.test', field: 'phone', from: '+15550100', to: '+15550177' },
          { member: 'bob@acme.test', field: 'slack_user_id', from: 'U0BOB', to: 'U0BOB2' },
        ]);
        assert.match(entry.data.changed_by, /bob@acme\.test/);
        await t.settled();
        assert.equal(smtp.messagesTo('bob@acme.test').length, mailsBefore);
      });

      test('an admin may clear an address of a member who acted (it sends nothing anywhere); Bob is told', async () => {
        const cleared = await editBob({ phone: '', slack_user_id: 'U0BOB2', channels: ['email'] });
        assert.equal(cleared.status, 303, cleared.text.slice(0, 300));
        assert.equal((await stored('bob@acme.test')).phone, null);
        const entry = await lastEvidence(t, workspace);
        assert.deepEqual(entry.data.addresses, [
          { member: 'bob@acme.test', field: 'phone', from: '+15550177', to: null },
        ]);
        assert.match((await nextMail('bob@acme.test', /addresses/)).body, /\+15550177/);
      });
    },
  );
}
