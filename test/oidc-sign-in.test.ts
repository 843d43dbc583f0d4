/**
 * Sign-in with the workspace's identity provider (issue 41), against a real OpenID Connect provider run
 * here (`oidc-provider`, test/support/oidc-idp.ts): a member signs in; the ways in that are refused —
 * another issuer, a replayed code, a crossed state or nonce, an unverified or unknown e-mail, a removed
 * member, another workspace's member; required OIDC leaves sign-in links to admins (break-glass);
 * just-in-time membership and the role mapping.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { inviteLink, mailSignInLinks } from '../src/services/sign-in.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, verifiedEvidence } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { startTestIdp, type TestIdp } from './support/oidc-idp.ts';
import { startTestService, type TestService } from './support/service.ts';

const MEMBERS = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
`;

interface Attempt {
  status: number;
  location: string | null;
  session: string | undefined;
  text: string;
}

for (const backend of backends) {
  describe(`sign-in with an identity provider on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let idp: TestIdp;
    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      idp = await startTestIdp(`${t.url}/app/sso/callback`);
      idp.accounts.set('ann', { email: 'ann@acme.test', email_verified: true, name: 'Ann' });
      idp.accounts.set('admin', { email: 'Admin@acme.test', email_verified: true });
      idp.accounts.set('unverified', { email: 'ann@acme.test', email_verified: false });
      idp.accounts.set('carol', { email: 'carol@acme.test', email_verified: true, name: 'Carol' });
      idp.accounts.set('dave', { email: 'dave@acme.test', email_verified: true, groups: ['approvers'] });
      idp.accounts.set('erin', { email: 'erin@acme.test', email_verified: true, groups: ['x', 'admins'] });
      idp.accounts.set('sole', { email: 'sole@acme.test', email_verified: true, groups: ['approvers'] });
    });
    after(async () => {
      await idp?.close();
      await t?.close();
    });

    const oidcYaml = (options: Record<string, unknown> = {}, issuer = idp.issuer) =>
      `sign_in:\n  oidc: ${JSON.stringify({
        name: 'Acme SSO',
        issuer,
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        ...options,
      })}\n`;

    async function workspaceWith(oidc: Record<string, unknown> = {}, members = MEMBERS) {
      const { workspace, key } = await t.workspace({ config: members + oidcYaml(oidc) });
      return { workspace, key };
    }

    /** Starts at the service, returns its pending cookie and the provider's authorization URL. */
    async function start(workspace: Workspace) {
      // A minute on: the sign-in pages' limit for addresses without a session does not stop the suite.
      await t.clock.advance(61_000, { runWorkers: false });
      const response = await fetch(`${t.url}/app/sso?workspace=${workspace.slug}`, { redirect: 'manual' });
      assert.equal(response.status, 303, await response.text());
      const pending = response.headers.getSetCookie().find((c) => c.startsWith('approvals_oidc='));
      assert.ok(pending, 'a pending sign-in cookie');
      return { cookie: pending.split(';')[0]!, authorizationUrl: response.headers.get('location')! };
    }

    async function callback(url: string, cookie: string): Promise<Attempt> {
      assert.ok(url.startsWith(`${t.url}/app/sso/callback?`), url);
      const response = await fetch(url, { headers: { cookie }, redirect: 'manual' });
      const session = response.headers
        .getSetCookie()
        .map((c) => c.match(/^approvals_session=([^;]+)/)?.[1])
        .find((value) => value !== undefined);
      return {
        status: response.status,
        location: response.headers.get('location'),
        session,
        text: await response.text(),
      };
    }

    async function signIn(workspace: Workspace, account: string): Promise<Attempt> {
      const { cookie, authorizationUrl } = await start(workspace);
      return callback(await idp.signInAt(authorizationUrl, account), cookie);
    }

    const memberOf = async (workspace: Workspace, email: string) =>
      (await exportConfig(t.service.ctx, workspace)).members?.find((m) => m.email === email);

    const entries = async (workspace: Workspace, type: string) =>
      (
        await t.service.ctx.db.all<{ data: string }>(
          'SELECT data FROM evidence WHERE workspace_id = $1 AND type = $2 ORDER BY seq',
          [workspace.id, type],
        )
      ).map((row) => JSON.parse(row.data) as Record<string, unknown>);

    test('a member signs in with the provider: a session, evidenced as an OIDC sign-in', async () => {
      const { workspace, key } = await workspaceWith();
      const login = await fetch(`${t.url}/app/login?workspace=${workspace.slug}`);
      assert.match(await login.text(), /Sign in with Acme SSO/);
      const { cookie, authorizationUrl } = await start(workspace);
      const asked = new URL(authorizationUrl);
      assert.ok(authorizationUrl.startsWith(idp.issuer));
      assert.equal(asked.searchParams.get('code_challenge_method'), 'S256');
      for (const param of ['state', 'nonce', 'code_challenge'])
        assert.ok(asked.searchParams.get(param), `${param} is sent`);
      const done = await callback(await idp.signInAt(authorizationUrl, 'admin'), cookie);
      assert.equal(done.status, 303, done.text);
      assert.equal(done.location, '/app/inbox');
      assert.ok(done.session);
      const inbox = await fetch(`${t.url}/app/inbox`, {
        headers: { cookie: `approvals_session=${done.session}` },
      });
      assert.equal(inbox.status, 200);
      const signedIn = (await entries(workspace, 'member.signed_in')).at(-1)!;
      assert.deepEqual(signedIn.member && (signedIn.member as { email: string }).email, 'admin@acme.test');
      assert.equal(signedIn.method, 'oidc');
      assert.ok((await verifiedEvidence(t, key)) > 1);
    });

    test('the secret is stored sealed and never exported; a file without it keeps it', async () => {
      const { workspace } = await workspaceWith();
      const row = await t.service.ctx.db.one<{ sealed: string }>(
        'SELECT client_secret_sealed AS sealed FROM oidc_clients WHERE workspace_id = $1',
        [workspace.id],
      );
      assert.ok(row && !row.sealed.includes(idp.clientSecret));
      const exported = await exportConfig(t.service.ctx, workspace);
      assert.equal(JSON.stringify(exported).includes(idp.clientSecret), false);
      assert.equal(exported.sign_in?.oidc.client_secret, undefined);
      await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(exported)));
      assert.equal((await signIn(workspace, 'ann')).status, 303, 'the kept secret still signs in');
      const applied = (await entries(workspace, 'config.applied')).map((entry) => JSON.stringify(entry));
      assert.ok(
        applied.every((entry) => !entry.includes(idp.clientSecret)),
        'no secret in the evidence',
      );
    });

    test('a provider whose discovery names another issuer is refused', async () => {
      // The same provider reached as localhost: its metadata says 127.0.0.1, so it is not this issuer.
      const other = idp.issuer.replace('127.0.0.1', 'localhost');
      const { workspace } = await t.workspace({ config: MEMBERS + oidcYaml({}, other) });
      const response = await fetch(`${t.url}/app/sso?workspace=${workspace.slug}`, { redirect: 'manual' });
      assert.equal(response.status, 502);
      assert.match(await response.text(), /issuer/);
    });

    test('a replayed callback (the same code) is refused', async () => {
      const { workspace } = await workspaceWith();
      const { cookie, authorizationUrl } = await start(workspace);
      const back = await idp.signInAt(authorizationUrl, 'ann');
      assert.equal((await callback(back, cookie)).status, 303);
      const again = await callback(back, cookie);
      assert.equal(again.status, 403);
      assert.equal(again.session, undefined);
    });

    test('a callback without its own browser state, or with another sign-in’s, is refused', async () => {
      const { workspace } = await workspaceWith();
      const first = await start(workspace);
      const second = await start(workspace);
      const back = await idp.signInAt(first.authorizationUrl, 'ann');
      const crossed = await callback(back, second.cookie);
      assert.equal(crossed.status, 403, 'state mismatch');
      assert.equal((await callback(back, '')).status, 403, 'no pending cookie');
      const forged = await callback(back, 'approvals_oidc=v1.AAAA.BBBB.CCCC');
      assert.equal(forged.status, 403, 'a forged cookie');
      assert.equal(crossed.session ?? forged.session, undefined);
      const late = await start(workspace);
      const lateBack = await idp.signInAt(late.authorizationUrl, 'ann');
      await t.clock.advance(11 * 60_000, { runWorkers: false });
      assert.equal((await callback(lateBack, late.cookie)).status, 403, 'after ten minutes');
    });

    test('an ID token with another nonce is refused', async () => {
      const { workspace } = await workspaceWith();
      const { cookie, authorizationUrl } = await start(workspace);
      const tampered = new URL(authorizationUrl);
      tampered.searchParams.set('nonce', 'a-nonce-the-attacker-chose');
      const done = await callback(await idp.signInAt(tampered.href, 'ann'), cookie);
      assert.equal(done.status, 403);
      assert.match(done.text, /nonce/);
    });

    test('an e-mail the provider does not vouch for is refused', async () => {
      const { workspace } = await workspaceWith();
      const done = await signIn(workspace, 'unverified');
      assert.equal(done.status, 403);
      assert.match(done.text, /email_verified/);
    });

    test('a removed member is refused, just-in-time or not', async () => {
      const { workspace } = await workspaceWith({ just_in_time: true });
      assert.equal((await signIn(workspace, 'ann')).status, 303);
      await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig('members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n'),
      );
      const done = await signIn(workspace, 'ann');
      assert.equal(done.status, 403);
      assert.equal(await memberOf(workspace, 'ann@acme.test'), undefined);
    });

    test('a member of another workspace cannot sign in to this one', async () => {
      await workspaceWith({}, MEMBERS + '  - { email: carol@acme.test, name: Carol, role: admin }\n');
      const { workspace: other } = await workspaceWith();
      const done = await signIn(other, 'carol');
      assert.equal(done.status, 403);
      assert.match(done.text, /not a member of this workspace/);
    });

    test('just-in-time membership: off by default; on, a verified address joins as a viewer, evidenced', async () => {
      const off = await workspaceWith();
      assert.equal((await signIn(off.workspace, 'carol')).status, 403);
      assert.equal(await memberOf(off.workspace, 'carol@acme.test'), undefined);
      const on = await workspaceWith({ just_in_time: true });
      const done = await signIn(on.workspace, 'carol');
      assert.equal(done.status, 303, done.text);
      assert.deepEqual(
        { ...(await memberOf(on.workspace, 'carol@acme.test')), channels: undefined },
        { email: 'carol@acme.test', name: 'Carol', role: 'viewer', channels: undefined },
      );
      const applied = (await entries(on.workspace, 'config.applied')).at(-1)!;
      assert.deepEqual(applied.sign_in, {
        member: 'carol@acme.test',
        issuer: idp.issuer,
        joined: { role: 'viewer' },
      });
      assert.ok((await verifiedEvidence(t, on.key)) > 2);
    });

    test('the role mapping: a joining member gets the mapped role, a member’s role follows the claim', async () => {
      const mapping = {
        roles_claim: 'groups',
        roles: { approvers: 'approver', admins: 'admin' },
        just_in_time: true,
      };
      const { workspace } = await workspaceWith(
        mapping,
        MEMBERS + '  - { email: erin@acme.test, name: Erin, role: viewer }\n',
      );
      assert.equal((await signIn(workspace, 'dave')).status, 303);
      assert.equal((await memberOf(workspace, 'dave@acme.test'))?.role, 'approver');
      assert.equal((await signIn(workspace, 'erin')).status, 303);
      assert.equal((await memberOf(workspace, 'erin@acme.test'))?.role, 'admin', 'the highest mapped role');
      // No claim value maps: the member keeps the role the workspace gave.
      assert.equal((await signIn(workspace, 'ann')).status, 303);
      assert.equal((await memberOf(workspace, 'ann@acme.test'))?.role, 'approver');
      const roleChange = (await entries(workspace, 'config.applied')).at(-1)!;
      assert.deepEqual(roleChange.sign_in, {
        member: 'erin@acme.test',
        issuer: idp.issuer,
        role: { from: 'viewer', to: 'admin' },
      });
    });

    test('the role mapping never demotes the last admin; another admin it does', async () => {
      const mapping = { roles_claim: 'groups', roles: { approvers: 'approver' } };
      const sole = await workspaceWith(
        mapping,
        'members:\n  - { email: sole@acme.test, name: Sole, role: admin }\n',
      );
      assert.equal((await signIn(sole.workspace, 'sole')).status, 303);
      assert.equal((await memberOf(sole.workspace, 'sole@acme.test'))?.role, 'admin', 'kept: the last admin');
      const two = await workspaceWith(
        mapping,
        MEMBERS + '  - { email: sole@acme.test, name: Sole, role: admin }\n',
      );
      assert.equal((await signIn(two.workspace, 'sole')).status, 303);
      assert.equal((await memberOf(two.workspace, 'sole@acme.test'))?.role, 'approver');
    });

    test('required: sign-in links only for admins (break-glass, evidenced); the provider for everyone', async () => {
      const { workspace } = await workspaceWith({ required: true });
      const useLink = async (email: string) => {
        const { url } = await inviteLink(t.service.ctx, workspace, email);
        return fetch(t.url + new URL(url).pathname, { method: 'POST', redirect: 'manual' });
      };
      const refused = await useLink('ann@acme.test');
      assert.equal(refused.status, 403);
      assert.match(await refused.text(), /Sign in with Acme SSO/);
      const breakGlass = await useLink('admin@acme.test');
      assert.equal(breakGlass.status, 303);
      const signIns = await entries(workspace, 'member.signed_in');
      assert.deepEqual(
        signIns.map((entry) => [(entry.member as { email: string }).email, entry.method, entry.break_glass]),
        [['admin@acme.test', 'sign_in_link', true]],
      );
      assert.equal((await signIn(workspace, 'ann')).status, 303, 'the provider still signs Ann in');
      // No link is made where it would be refused; the admin's is. (Ann is a member of other workspaces.)
      const { ctx } = t.service;
      ctx.mailer = { send: async () => {}, close: () => {} };
      try {
        const linksBefore = (await entries(workspace, 'member.sign_in_link')).length;
        for (const email of ['ann@acme.test', 'admin@acme.test'])
          await mailSignInLinks(ctx, (await findMemberByEmail(ctx.db, workspace.id, email))!.id);
        const made = (await entries(workspace, 'member.sign_in_link')).slice(linksBefore);
        assert.deepEqual(
          made.map((entry) => (entry.member as { email: string }).email),
          ['admin@acme.test'],
        );
      } finally {
        ctx.mailer = null;
      }
    });

    test('once required, sessions opened by a link end for everyone but admins (they lasted 7 days)', async () => {
      const { workspace } = await workspaceWith();
      const app = appClient(t);
      const ann = await app.signIn(workspace, 'ann@acme.test');
      const admin = await app.signIn(workspace, 'admin@acme.test');
      assert.equal((await app.get(ann, '/app/inbox')).status, 200);
      const annMember = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'ann@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, annMember);
      const widget = () =>
        fetch(`${t.url}/widget/api/holds`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal((await widget()).status, 200);
      await applyConfig(t.service.ctx, workspace, parseConfig(MEMBERS + oidcYaml({ required: true })));
      assert.equal((await widget()).status, 401, 'her embed token ends too');
      const annNow = await app.get(ann, '/app/inbox');
      assert.equal(annNow.status, 303, 'Ann signs in again, with the provider');
      assert.match(annNow.location ?? '', /\/app\/login/);
      assert.equal((await app.get(admin, '/app/inbox')).status, 200, 'the admin stays (break-glass)');
      const [change] = (await entries(workspace, 'config.applied')).slice(-1);
      assert.equal((change!.sign_in as { sessions_ended: number }).sessions_ended, 1);
      // Applied again unchanged, nothing more ends.
      const again = await app.signIn(workspace, 'admin@acme.test');
      await applyConfig(t.service.ctx, workspace, parseConfig(MEMBERS + oidcYaml({ required: true })));
      assert.equal((await app.get(again, '/app/inbox')).status, 200);
      // An admin in by a link (break-glass) made approver keeps no session: the provider again.
      const demoted =
        MEMBERS.replace('role: admin', 'role: approver') +
        '  - { email: boss@acme.test, name: Boss, role: admin }\n';
      await applyConfig(t.service.ctx, workspace, parseConfig(demoted + oidcYaml({ required: true })));
      assert.equal((await app.get(again, '/app/inbox')).status, 303);
    });

    test('the admin page sets the provider (the secret never shown), tests it; an approver cannot', async () => {
      const { workspace } = await t.workspace({ config: MEMBERS });
      const app = appClient(() => t);
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const empty = await app.get(admin, '/app/admin/sign-in');
      assert.match(empty.text, new RegExp(`${t.url}/app/sso/callback`));
      const version = empty.text.match(/name="config_version" value="(\d+)"/)![1]!;
      const saved = await app.post(admin, '/app/admin/sign-in', {
        config_version: version,
        name: 'Acme SSO',
        issuer: idp.issuer,
        client_id: idp.clientId,
        client_secret: idp.clientSecret,
        roles_claim: 'groups',
        roles: 'approvers = approver\nadmins = admin',
        just_in_time: 'yes',
      });
      assert.equal(saved.status, 303, saved.text);
      const page = await app.follow(admin, saved);
      assert.match(page.text, /Sign-in saved/);
      assert.equal(page.text.includes(idp.clientSecret), false, 'the secret is not in the page');
      assert.match(page.text, /stored; leave empty to keep it/);
      const oidc = (await exportConfig(t.service.ctx, workspace)).sign_in?.oidc;
      assert.deepEqual(oidc?.roles, { approvers: 'approver', admins: 'admin' });
      assert.equal(oidc?.just_in_time, true);
      const tested = await app.post(admin, '/app/admin/sign-in/test', {});
      assert.match(tested.text, new RegExp(`Connected: the provider answers as ${idp.issuer}`));
      assert.equal((await signIn(workspace, 'dave')).status, 303, 'the saved secret signs in');
      const wrong = await app.post(admin, '/app/admin/sign-in', {
        name: 'Acme SSO',
        issuer: idp.issuer,
        client_id: idp.clientId,
        roles_claim: 'groups',
        roles: 'approvers = owner',
      });
      assert.equal(wrong.status, 422);
      const approver = await app.signIn(workspace, 'ann@acme.test');
      assert.equal((await app.get(approver, '/app/admin/sign-in')).status, 403);
      const forbidden = await app.post(approver, '/app/admin/sign-in', { issuer: '' });
      assert.equal(forbidden.status, 403);
      assert.ok((await exportConfig(t.service.ctx, workspace)).sign_in, 'still set');
    });

    test('a file with a roles map but no claim, or an http issuer elsewhere than this machine, is refused', () => {
      assert.throws(() => parseConfig(oidcYaml({ roles: { a: 'admin' } })), /roles_claim/);
      assert.throws(() => parseConfig(oidcYaml({}, 'http://idp.example.com')), /https/);
    });

    test('an issuer at an internal address is refused unless ALLOW_PRIVATE_TARGETS', async () => {
      const { workspace } = await t.workspace({ config: MEMBERS });
      t.service.ctx.allowPrivateTargets = false;
      try {
        await assert.rejects(
          applyConfig(t.service.ctx, workspace, parseConfig(oidcYaml())),
          /sign_in\.oidc\.issuer.*internal address|internal address/,
        );
      } finally {
        t.service.ctx.allowPrivateTargets = true;
      }
      assert.equal((await exportConfig(t.service.ctx, workspace)).sign_in, undefined);
    });
  });
}
