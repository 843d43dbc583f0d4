/**
 * The admin pages of the app: API keys, members and groups, branding, and the rule builder. Every
 * change goes through `applyConfig` (like `approvals apply`), is evidenced, and only admins with the
 * session's CSRF token can make it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { exportConfig } from '../src/services/apply-config.ts';
import { listWorkspaceApiKeys } from '../src/services/api-keys.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import {
  appClient,
  lastEvidence,
  verifiedEvidence,
  type Fields,
  type Page,
  type Session,
  unescapeHtml,
} from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: second@acme.test, name: Sam Second, role: admin }
  - { email: approver@acme.test, name: Avery Approver, role: approver }
  - { email: viewer@acme.test, name: Vic Viewer, role: viewer }
`;

const ADMIN_GETS = [
  '/app/admin/rules',
  '/app/admin/rules?new',
  '/app/admin/rules/x',
  '/app/admin/members',
  '/app/admin/members/admin%40acme.test',
  '/app/admin/keys',
  '/app/admin/branding',
  '/app/admin/slack',
  '/app/admin/teams',
];

const ADMIN_POSTS = [
  '/app/admin/rules',
  '/app/admin/rules/x',
  '/app/admin/rules/x/delete',
  '/app/admin/tools',
  '/app/admin/members',
  '/app/admin/members/admin%40acme.test',
  '/app/admin/members/admin%40acme.test/delete',
  '/app/admin/members/admin%40acme.test/invite',
  '/app/admin/groups',
  '/app/admin/groups/finance',
  '/app/admin/groups/finance/delete',
  '/app/admin/keys',
  '/app/admin/keys/key_x/revoke',
  '/app/admin/keys/grants/x/revoke',
  '/app/admin/branding',
  '/app/admin/slack',
  '/app/admin/teams',
];

/** The hidden inputs of the first form after `marker` in a page. */
function hiddenInputs(text: string, marker: string): [string, string][] {
  const start = text.indexOf(marker);
  assert.ok(start >= 0, `no ${marker} in the page`);
  const form = text.slice(text.indexOf('<form', start), text.indexOf('</form>', start));
  return [...form.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g)].map((m) => [
    unescapeHtml(m[1]!),
    unescapeHtml(m[2]!),
  ]);
}

/** The condition rows of an empty rule form, as the browser would send them. */
const emptyRows = (from: number, to: number): Fields =>
  Object.fromEntries(
    Array.from({ length: to - from }, (_, i) => [
      [`cond_arg_${from + i}`, ''],
      [`cond_op_${from + i}`, 'eq'],
      [`cond_value_${from + i}`, ''],
    ]).flat(),
  );

for (const backend of backends) {
  describe(`admin pages on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let admin: Session;
    let approver: Session;
    let viewer: Session;

    const { follow, get, post, signIn } = appClient(() => t);

    const config = () => exportConfig(t.service.ctx, workspace);
    const hold = (body: Record<string, unknown>, apiKey = key) =>
      call(t.url, 'POST', '/api/v1/holds', { key: apiKey, body: submission(body) });
    const evidence = () => verifiedEvidence(t, key);
    const lastEntry = () => lastEvidence(t, workspace);
    /** Expects one successful change: a redirect with a notice, and one `config.applied` entry. */
    async function changed(page: Page, before: number, location: RegExp) {
      assert.equal(page.status, 303, page.text.slice(0, 2000));
      assert.match(page.location ?? '', location);
      assert.equal(await evidence(), before + 1);
      assert.equal((await lastEntry()).type, 'config.applied');
    }

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      admin = await signIn(workspace, 'admin@acme.test');
      approver = await signIn(workspace, 'approver@acme.test');
      viewer = await signIn(workspace, 'viewer@acme.test');
    });
    after(() => t?.close());

    test('admins reach every admin page', async () => {
      for (const path of ADMIN_GETS) {
        const page = await get(admin, path);
        assert.equal(page.status, path === '/app/admin/rules/x' ? 404 : 200, path);
        assert.match(page.text, /<html lang="en">/);
      }
    });

    test('approvers, viewers and signed-out requests are refused on every admin route', async () => {
      const keysBefore = (await listWorkspaceApiKeys(t.service.ctx, workspace)).length;
      const configBefore = await config();
      const checked = await evidence();
      for (const session of [approver, viewer]) {
        for (const path of ADMIN_GETS) assert.equal((await get(session, path)).status, 403, path);
        for (const path of ADMIN_POSTS) {
          const page = await post(session, path, {
            env: 'live',
            name: 'Evil',
            email: 'admin@acme.test',
            role: 'viewer',
            mode: 'edit',
            confirm: 'yes',
            rule: 'x',
            tool: 'x',
            effect: 'allow',
            connection: 'SDK',
            classification: 'allow',
          });
          assert.equal(page.status, 403, path);
          assert.match(page.text, /for workspace admins/);
        }
      }
      for (const path of ADMIN_GETS) {
        const page = await get(null, path);
        assert.equal(page.status, 303, path);
        assert.match(page.location ?? '', /^\/app\/login(\?|$)/);
      }
      for (const path of ADMIN_POSTS) assert.equal((await post(null, path, { name: 'x' })).status, 401, path);
      assert.equal((await listWorkspaceApiKeys(t.service.ctx, workspace)).length, keysBefore);
      assert.deepEqual(await config(), configBefore);
      assert.equal(await evidence(), checked);
    });

    test('a form without the session CSRF token, or with a wrong one, changes nothing', async () => {
      const keysBefore = (await listWorkspaceApiKeys(t.service.ctx, workspace)).length;
      const configBefore = await config();
      const checked = await evidence();
      for (const csrf of [null, '', 'wrong-token', approver.csrf]) {
        const made = await post(admin, '/app/admin/keys', { env: 'live', name: 'x' }, csrf);
        assert.equal(made.status, 403);
        assert.doesNotMatch(made.text, /svc_live_/);
        const branded = await post(admin, '/app/admin/branding', { name: 'Hijacked', action: 'save' }, csrf);
        assert.equal(branded.status, 403);
        const member = await post(
          admin,
          '/app/admin/members',
          { email: 'evil@acme.test', name: 'Evil', role: 'admin', channels: 'email' },
          csrf,
        );
        assert.equal(member.status, 403);
      }
      const foreign = await fetch(`${t.url}/app/admin/branding`, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          cookie: `approvals_session=${admin.cookie}`,
          origin: 'https://evil.example',
        },
        body: new URLSearchParams({ _csrf: admin.csrf, name: 'Hijacked', action: 'save' }).toString(),
        redirect: 'manual',
      });
      assert.equal(foreign.status, 403);
      assert.equal((await listWorkspaceApiKeys(t.service.ctx, workspace)).length, keysBefore);
      assert.deepEqual(await config(), configBefore);
      assert.equal(await evidence(), checked);
    });

    test('an admin key made in the app reads the configuration over the API; an agent key may not', async () => {
      const invalid = await post(admin, '/app/admin/keys', { env: 'live', scope: 'root', name: 'x' });
      assert.equal(invalid.status, 422);
      assert.match(invalid.text, /Choose agent or admin/);
      const made = await post(admin, '/app/admin/keys', { env: 'live', scope: 'admin', name: 'CI' });
      assert.equal(made.status, 200);
      assert.match(made.text, /An <strong>admin<\/strong> key/);
      const plaintext = made.text.match(/id="new-key-value">(svc_live_[A-Za-z0-9_-]{43})</)?.[1];
      assert.ok(plaintext);
      const created = (await listWorkspaceApiKeys(t.service.ctx, workspace)).find((k) => k.name === 'CI')!;
      assert.equal(created.scope, 'admin');
      assert.match((await get(admin, '/app/admin/keys')).text, /<td data-label="Scope">admin<\/td>/);
      assert.equal((await call(t.url, 'GET', '/api/v1/workspace/config', { key: plaintext })).status, 200);
      assert.equal((await call(t.url, 'GET', '/api/v1/workspace/config', { key })).status, 403);
      await post(admin, `/app/admin/keys/${created.id}/revoke`, { confirm: 'yes' });
    });

    test('a new key is shown once, works at once, and stops working when revoked', async () => {
      const invalid = await post(admin, '/app/admin/keys', { env: 'prod', name: 'x' });
      assert.equal(invalid.status, 422);
      assert.match(invalid.text, /Choose live or test/);

      const made = await post(admin, '/app/admin/keys', { env: 'test', name: 'CI <runner>' });
      assert.equal(made.status, 200);
      const plaintext = made.text.match(
        /<p class="secret" id="new-key-value">(svc_test_[A-Za-z0-9_-]{43})<\/p>/,
      )?.[1];
      assert.ok(plaintext, 'the key in a .secret box');
      assert.match(made.text, /will not be shown again/);
      assert.match(made.text, /CI &lt;runner&gt;/);
      assert.equal(made.text.split(plaintext).length, 2, 'shown exactly once on the page');

      const list = await get(admin, '/app/admin/keys');
      assert.equal(list.status, 200);
      assert.ok(!list.text.includes(plaintext), 'never shown again');
      const keys = await listWorkspaceApiKeys(t.service.ctx, workspace);
      const created = keys.find((k) => k.name === 'CI <runner>')!;
      assert.equal(created.env, 'test');
      assert.ok(list.text.includes(created.id));

      const submitted = await hold({ tool_name: 'key_check' }, plaintext);
      assert.equal(submitted.status, 201, submitted.text);
      assert.equal(
        (await call(t.url, 'GET', `/api/v1/holds/${submitted.body.id}`, { key })).body.environment,
        'test',
      );

      // Revoking asks first; the first step changes nothing.
      const asked = await post(admin, `/app/admin/keys/${created.id}/revoke`, {});
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Revoke this key\?/);
      assert.match(asked.text, /name="confirm" value="yes"/);
      assert.equal((await hold({ tool_name: 'key_check' }, plaintext)).status, 201);

      const revoked = await post(admin, `/app/admin/keys/${created.id}/revoke`, { confirm: 'yes' });
      assert.equal(revoked.status, 303);
      assert.equal(revoked.location, '/app/admin/keys');
      assert.equal(revoked.notice, 'revoked');
      assert.equal((await hold({ tool_name: 'key_check' }, plaintext)).status, 401);
      const after = await follow(admin, revoked);
      assert.match(after.text, /The key is revoked/);
      assert.match(after.text, /status rejected">revoked/);

      // Another workspace's key cannot be revoked from here.
      const other = await t.workspace();
      const [otherKey] = await listWorkspaceApiKeys(t.service.ctx, other.workspace);
      const foreign = await post(admin, `/app/admin/keys/${otherKey!.id}/revoke`, { confirm: 'yes' });
      assert.equal(foreign.status, 404);
      assert.equal((await hold({ tool_name: 'key_check' }, other.key)).status, 201);
    });

    test('members: add, edit and remove, with field errors shown in the page', async () => {
      let checked = await evidence();
      const bad = await post(admin, '/app/admin/members', {
        email: 'bob@acme.test',
        name: 'Bob',
        role: 'approver',
        phone: '555-0100',
        slack_user_id: '',
        channels: ['email', 'sms'],
      });
      assert.equal(bad.status, 422);
      assert.match(bad.text, /id="m-phone-error">must be an E.164 number/);
      assert.match(bad.text, /value="bob@acme.test"/, 'the form keeps what was typed');
      assert.ok(!(await config()).members!.some((m) => m.email === 'bob@acme.test'));
      assert.equal(await evidence(), checked);

      const added = await post(admin, '/app/admin/members', {
        email: 'Bob@Acme.test',
        name: 'Bob Builder',
        role: 'approver',
        phone: '+15550100',
        slack_user_id: '',
        channels: ['email', 'sms'],
      });
      await changed(added, checked++, /^\/app\/admin\/members$/);
      assert.equal(added.notice, 'added');
      assert.deepEqual(
        (await config()).members!.find((m) => m.email === 'bob@acme.test'),
        {
          email: 'bob@acme.test',
          name: 'Bob Builder',
          role: 'approver',
          phone: '+15550100',
          channels: ['email', 'sms'],
        },
      );
      const listed = await follow(admin, added);
      assert.match(listed.text, /Member added/);
      assert.match(listed.text, /Bob Builder/);

      const twice = await post(admin, '/app/admin/members', {
        email: 'bob@acme.test',
        name: 'Bob again',
        role: 'viewer',
        channels: 'email',
      });
      assert.equal(twice.status, 422);
      assert.match(twice.text, /Is already a member/);

      // The edit form's old address, bookmarked, leads to the member's own.
      const old = await get(admin, '/app/admin/members/edit?email=bob%40acme.test');
      assert.equal(old.status, 301);
      assert.equal(old.location, '/app/admin/members/bob%40acme.test');
      const form = await get(admin, '/app/admin/members/bob%40acme.test');
      assert.match(form.text, /value="Bob Builder"/);
      assert.match(form.text, /value="sms"\s+checked/);
      const edited = await post(admin, '/app/admin/members/bob%40acme.test', {
        name: 'Bobby',
        role: 'viewer',
        phone: '',
        slack_user_id: 'U0BOB',
        channels: 'slack',
      });
      await changed(edited, checked++, /^\/app\/admin\/members$/);
      assert.equal(edited.notice, 'updated');
      assert.deepEqual(
        (await config()).members!.find((m) => m.email === 'bob@acme.test'),
        {
          email: 'bob@acme.test',
          name: 'Bobby',
          role: 'viewer',
          slack_user_id: 'U0BOB',
          channels: ['slack'],
        },
      );

      const self = await post(admin, '/app/admin/members/admin%40acme.test', {
        name: 'Ada',
        role: 'viewer',
        channels: 'email',
      });
      assert.equal(self.status, 422);
      assert.match(self.text, /cannot change your own role/);
      assert.equal(
        (await post(admin, '/app/admin/members/admin%40acme.test/delete', { confirm: 'yes' })).status,
        422,
      );

      const asked = await post(admin, '/app/admin/members/bob%40acme.test/delete', {});
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Remove this member\?/);
      assert.ok((await config()).members!.some((m) => m.email === 'bob@acme.test'));
      const removed = await post(admin, '/app/admin/members/bob%40acme.test/delete', { confirm: 'yes' });
      await changed(removed, checked, /^\/app\/admin\/members$/);
      assert.equal(removed.notice, 'removed');
      assert.ok(!(await config()).members!.some((m) => m.email === 'bob@acme.test'));
      assert.deepEqual((await lastEntry()).data.members.removed, ['bob@acme.test']);
    });

    test('invite on Members makes a first one-time sign-in link, shown once with a copy button', async () => {
      const page = await get(admin, '/app/admin/members');
      assert.match(page.text, /action="\/app\/admin\/members\/second%40acme\.test\/invite"/);
      const made = await post(admin, '/app/admin/members/second%40acme.test/invite', {});
      assert.equal(made.status, 200);
      assert.match(made.text, /Sign-in link for second@acme\.test/);
      const url = made.text.match(/<p class="secret" id="invite-link">([^<]+)<\/p>/)?.[1];
      assert.ok(url, 'the link is on the page, as text');
      assert.match(made.text, /<button type="button" class="secondary" data-copy="invite-link" hidden>/);
      assert.match(made.text, /<script src="\/app\/static\/copy\.js" defer><\/script>/);
      // The link signs the member in, once.
      const used = await fetch(t.url + new URL(url).pathname, { method: 'POST', redirect: 'manual' });
      assert.equal(used.status, 303);
      assert.match(used.headers.get('set-cookie') ?? '', /approvals_session=/);
      const again = await fetch(t.url + new URL(url).pathname, { method: 'POST', redirect: 'manual' });
      assert.notEqual(again.status, 303);
      assert.ok(!(await get(admin, '/app/admin/members')).text.includes(url), 'shown once');
      // Once signed in, a member's links go to their own e-mail only (none here): test/sign-in-links.test.ts.
      const returning = await post(admin, '/app/admin/members/second%40acme.test/invite', {});
      assert.equal(returning.status, 409);
      assert.doesNotMatch(returning.text, /\/app\/login\/\w/);

      const stranger = await post(admin, '/app/admin/members/nobody%40acme.test/invite', {});
      assert.equal(stranger.status, 404);
      assert.doesNotMatch(stranger.text, /nobody@acme/);
      const script = await fetch(`${t.url}/app/static/copy.js`);
      assert.equal(script.status, 200);
      assert.match(await script.text(), /navigator\.clipboard\.writeText/);
    });

    test('groups: create, set members, and delete; a rule that needs the group stops its deletion', async () => {
      let checked = await evidence();
      const empty = await post(admin, '/app/admin/groups', { name: 'finance' });
      assert.equal(empty.status, 422);
      assert.match(empty.text, /Choose at least one member/);

      const created = await post(admin, '/app/admin/groups', {
        name: 'finance',
        members: ['admin@acme.test', 'approver@acme.test'],
      });
      await changed(created, checked++, /^\/app\/admin\/members#groups$/);
      assert.equal(created.notice, 'group_saved');
      assert.deepEqual((await config()).groups, { finance: ['admin@acme.test', 'approver@acme.test'] });

      const set = await post(admin, '/app/admin/groups/finance', {
        members: ['approver@acme.test', 'second@acme.test'],
      });
      await changed(set, checked++, /^\/app\/admin\/members#groups$/);
      assert.equal(set.notice, 'group_saved');
      assert.deepEqual((await config()).groups, { finance: ['approver@acme.test', 'second@acme.test'] });
      assert.match((await get(admin, '/app/admin/members')).text, /Save members of finance/);

      const rule = await post(admin, '/app/admin/rules', {
        name: 'Finance approves refunds',
        connection: 'SDK',
        tool: 'refund.*',
        agent: '',
        ...emptyRows(0, 3),
        freq_more_than: '',
        freq_per: '',
        freq_by: 'tool',
        effect: 'approval',
        approvers: 'group:finance',
        approvals_required: '2',
        timeout_minutes: '',
        reason: '',
        action: 'save',
      });
      await changed(rule, checked++, /^\/app\/admin\/rules$/);
      assert.equal(rule.notice, 'saved');

      // Two approvals from a group of one: refused, with the rule named.
      const shrink = await post(admin, '/app/admin/groups/finance', {
        members: ['approver@acme.test'],
      });
      assert.equal(shrink.status, 422);
      assert.match(shrink.text, /Finance approves refunds/);
      const blocked = await post(admin, '/app/admin/groups/finance/delete', { confirm: 'yes' });
      assert.equal(blocked.status, 422);
      assert.match(blocked.text, /Rule “Finance approves refunds”/);
      assert.match(blocked.text, /names no group/);
      assert.deepEqual((await config()).groups, { finance: ['approver@acme.test', 'second@acme.test'] });
      assert.equal(await evidence(), checked);

      const deleteRule = await post(
        admin,
        `/app/admin/rules/${encodeURIComponent('Finance approves refunds')}/delete`,
        { confirm: 'yes' },
      );
      await changed(deleteRule, checked++, /^\/app\/admin\/rules$/);
      assert.equal(deleteRule.notice, 'deleted');
      const asked = await post(admin, '/app/admin/groups/finance/delete', {});
      assert.match(asked.text, /Delete group finance\?/);
      const deleted = await post(admin, '/app/admin/groups/finance/delete', { confirm: 'yes' });
      await changed(deleted, checked, /^\/app\/admin\/members$/);
      assert.equal(deleted.notice, 'group_deleted');
      assert.deepEqual((await config()).groups, {});
    });

    test('a new tool classified on the rules page decides its next call', async () => {
      const first = await hold({ tool_name: 'wire.transfer' });
      assert.equal(first.body.status, 'pending');
      const page = await get(admin, '/app/admin/rules');
      assert.match(page.text, /Tools to classify first/);
      const section = page.text.slice(page.text.indexOf('id="classify"'));
      assert.match(section, /wire\.transfer/);

      let checked = await evidence();
      const denied = await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'wire.transfer',
        classification: 'deny',
      });
      await changed(denied, checked, /^\/app\/admin\/rules$/);
      assert.equal(denied.notice, 'classified');
      assert.equal((await hold({ tool_name: 'wire.transfer' })).body.status, 'denied');
      assert.deepEqual(
        (await config()).tools!.find((tool) => tool.tool === 'wire.transfer'),
        { connection: 'SDK', tool: 'wire.transfer', classification: 'deny' },
      );
      const later = (await get(admin, '/app/admin/rules')).text;
      const toClassify = later.includes('id="classify"')
        ? later.slice(
            later.indexOf('id="classify"'),
            later.indexOf('</section>', later.indexOf('id="classify"')),
          )
        : '';
      assert.doesNotMatch(toClassify, /wire\.transfer/);
      assert.match(later, /<code>wire\.transfer<\/code>[\s\S]*?status rejected"\s*>deny/);

      checked = await evidence();
      const allowed = await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'wire.transfer',
        classification: 'allow',
      });
      await changed(allowed, checked, /^\/app\/admin\/rules$/);
      assert.equal(allowed.notice, 'classified');
      assert.equal((await hold({ tool_name: 'wire.transfer' })).body.status, 'allowed');

      checked = await evidence();
      const bad = await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'no spaces allowed',
        classification: 'deny',
      });
      assert.equal(bad.status, 422);
      assert.match(bad.text, /Tool name: must be 1-200 characters/);
      assert.equal(await evidence(), checked);
    });

    test('a rule built in the form, with conditions and a frequency, decides matching calls', async () => {
      const checked = await evidence();
      const saved = await post(admin, '/app/admin/rules', {
        name: 'Large EUR payments in bursts',
        connection: 'SDK',
        tool: 'pay.*',
        agent: 'billing-*',
        cond_arg_0: 'amount',
        cond_op_0: 'gt',
        cond_type_0: 'number',
        cond_value_0: '1000',
        cond_arg_1: '',
        cond_op_1: 'eq',
        cond_value_1: '',
        cond_arg_2: 'currency',
        cond_op_2: 'in',
        cond_type_2: 'json',
        cond_value_2: '["EUR", "CHF"]',
        freq_more_than: '1',
        freq_per: 'hour',
        freq_by: 'tool',
        effect: 'deny',
        approvers: 'role:admin',
        approvals_required: '2',
        timeout_minutes: '',
        reason: 'Too much at once',
        action: 'save',
      });
      await changed(saved, checked, /^\/app\/admin\/rules$/);
      assert.equal(saved.notice, 'saved');
      const rule = (await config()).rules!.find((r) => r.name === 'Large EUR payments in bursts');
      assert.deepEqual(rule, {
        name: 'Large EUR payments in bursts',
        connection: 'SDK',
        tool: 'pay.*',
        agent: 'billing-*',
        when: [
          { arg: 'amount', op: 'gt', value: 1000 },
          { arg: 'currency', op: 'in', value: ['EUR', 'CHF'] },
        ],
        frequency: { more_than: 1, per: 'hour', by: 'tool' },
        effect: 'deny',
        reason: 'Too much at once',
      });
      assert.equal((await lastEntry()).data.rules.length, (await config()).rules!.length);

      const billing = { id: 'billing-bot', label: null };
      const big = { amount: 5000, currency: 'EUR' };
      const one = await hold({ tool_name: 'pay.send', arguments: big, agent_identity: billing });
      assert.equal(one.body.status, 'pending', 'the first call of the hour is under the frequency');
      const two = await hold({ tool_name: 'pay.send', arguments: big, agent_identity: billing });
      assert.equal(two.body.status, 'denied');
      const record = await call(t.url, 'GET', `/api/v1/holds/${two.body.id}`, { key });
      assert.equal(record.body.decision.reason, 'Too much at once');
      const small = await hold({
        tool_name: 'pay.send',
        arguments: { amount: 10, currency: 'EUR' },
        agent_identity: billing,
      });
      assert.equal(small.body.status, 'pending');
      const otherAgent = await hold({ tool_name: 'pay.send', arguments: big, agent_identity: { id: 'ops' } });
      assert.equal(otherAgent.body.status, 'pending');

      // The list shows it in words; the edit form comes back filled in, a list of texts as text.
      const list = await follow(admin, saved);
      assert.match(list.text, /Rule saved/);
      assert.match(list.text, /Large EUR payments in bursts/);
      assert.match(list.text, /<code>amount<\/code>\s*is more than <code>1000<\/code>/);
      assert.match(list.text, /is one of “<code>EUR<\/code>”, “<code>CHF<\/code>”/);
      assert.match(list.text, /more than 1 per hour/);
      const form = await get(admin, `/app/admin/rules/${encodeURIComponent('Large EUR payments in bursts')}`);
      assert.equal(form.status, 200);
      assert.match(form.text, /name="cond_value_1"[^>]*value="EUR, CHF"/s);
      assert.match(form.text, /name="cond_type_1"[^>]*>\s*<option value="text"\s+selected/s);
      assert.match(form.text, /name="cond_type_0"[^>]*>[\s\S]*?<option value="number"\s+selected/);
      assert.match(form.text, /<option value="in"\s+selected/);
      assert.match(form.text, /name="cond_arg_4"/, 'three empty rows after the two conditions');
      assert.doesNotMatch(form.text, /name="cond_arg_5"/);

      // Editing keeps the name (or renames) and replaces the rule in place.
      const beforeEdit = await evidence();
      const edited = await post(
        admin,
        `/app/admin/rules/${encodeURIComponent('Large EUR payments in bursts')}`,
        {
          name: 'Large EUR payments',
          connection: '',
          tool: 'pay.*',
          agent: '',
          cond_arg_0: 'amount',
          cond_op_0: 'gte',
          cond_type_0: 'number',
          cond_value_0: '1000',
          ...emptyRows(1, 4),
          freq_more_than: '',
          freq_per: '',
          freq_by: 'tool',
          effect: 'approval',
          approvers: ['role:admin', 'approver@acme.test'],
          approvals_required: '2',
          timeout_minutes: '30',
          reason: '',
          action: 'save',
        },
      );
      await changed(edited, beforeEdit, /^\/app\/admin\/rules$/);
      const rules = (await config()).rules!;
      assert.ok(!rules.some((r) => r.name === 'Large EUR payments in bursts'));
      assert.deepEqual(
        rules.find((r) => r.name === 'Large EUR payments'),
        {
          name: 'Large EUR payments',
          tool: 'pay.*',
          when: [{ arg: 'amount', op: 'gte', value: 1000 }],
          effect: 'approval',
          approvers: ['role:admin', 'approver@acme.test'],
          approvals_required: 2,
          timeout_minutes: 30,
        },
      );
      const pending = await hold({ tool_name: 'pay.send', arguments: { amount: 1000 } });
      assert.equal(pending.body.status, 'pending');
      const detail = await call(t.url, 'GET', `/api/v1/holds/${pending.body.id}`, { key });
      assert.deepEqual(detail.body.approvals, { required: 2, received: 0 });
    });

    test('an invalid condition value is a field error next to its row, and nothing is saved', async () => {
      const rulesBefore = (await config()).rules;
      const checked = await evidence();
      const page = await post(admin, '/app/admin/rules', {
        name: 'Bad values',
        connection: '',
        tool: 'pay.*',
        agent: '',
        cond_arg_0: 'currency',
        cond_op_0: 'eq',
        cond_type_0: 'json',
        cond_value_0: 'EUR',
        cond_arg_1: 'country',
        cond_op_1: 'in',
        cond_type_1: 'json',
        cond_value_1: '"DE"',
        cond_arg_2: 'note',
        cond_op_2: 'matches',
        cond_value_2: '(?=x)',
        freq_more_than: 'lots',
        freq_per: 'hour',
        freq_by: 'tool',
        effect: 'approval',
        approvers: 'nobody@acme.test',
        approvals_required: '1',
        timeout_minutes: '',
        reason: '',
        action: 'save',
      });
      assert.equal(page.status, 422);
      assert.match(page.text, /id="c0-value-error">Is not valid JSON/);
      assert.match(page.text, /id="c1-value-error">Must be a list for in/);
      assert.match(page.text, /id="c2-value-error">Is not a valid RE2 regular expression/);
      assert.match(page.text, /id="r-more-than-error">Give a whole number/);
      assert.match(page.text, /id="r-approvers-error">Is not a member of the workspace/, 'all at once');
      assert.match(page.text, /Nothing was changed/);
      assert.match(page.text, /name="cond_value_0"[^>]*value="EUR"/s, 'what was typed comes back');
      assert.deepEqual((await config()).rules, rulesBefore);
      assert.equal(await evidence(), checked);

      // Once the form is valid on its own, the service's checks come back as field errors too.
      const approvers = await post(admin, '/app/admin/rules', {
        name: 'Bad approvers',
        connection: '',
        tool: 'pay.*',
        agent: '',
        ...emptyRows(0, 3),
        freq_more_than: '',
        freq_per: '',
        freq_by: 'tool',
        effect: 'approval',
        approvers: ['nobody@acme.test'],
        approvals_required: '1',
        timeout_minutes: '',
        reason: '',
        action: 'save',
      });
      assert.equal(approvers.status, 422);
      assert.match(approvers.text, /id="r-approvers-error">Is not a member of the workspace/);
      assert.match(approvers.text, /nobody@acme.test \(not a current approver\)/);
      const dup = await post(admin, '/app/admin/rules', {
        name: 'Large EUR payments',
        tool: 'x',
        effect: 'allow',
        action: 'save',
      });
      assert.equal(dup.status, 422);
      assert.match(dup.text, /id="r-name-error">Is used by another rule/);
      assert.deepEqual((await config()).rules, rulesBefore);
      assert.equal(await evidence(), checked);
    });

    test('conditions take text as typed and numbers as numbers; the list shows them in words', async () => {
      const checked = await evidence();
      const saved = await post(admin, '/app/admin/rules', {
        name: 'Dangerous shell',
        tool: 'shell.run',
        cond_arg_0: 'command',
        cond_op_0: 'matches',
        cond_type_0: 'text',
        cond_value_0: 'rm -rf',
        cond_arg_1: 'ticket',
        cond_op_1: 'matches',
        cond_type_1: 'text',
        cond_value_1: '^OPS-\\d+$',
        cond_arg_2: 'retries',
        cond_op_2: 'gte',
        cond_type_2: 'number',
        cond_value_2: ' 3 ',
        cond_arg_3: 'zip',
        cond_op_3: 'in',
        cond_type_3: 'text',
        cond_value_3: '10115, 80331',
        cond_arg_4: 'sudo',
        cond_op_4: 'exists',
        cond_type_4: 'text',
        cond_value_4: 'false',
        effect: 'deny',
        action: 'save',
      });
      await changed(saved, checked, /^\/app\/admin\/rules$/);
      assert.deepEqual((await config()).rules!.find((r) => r.name === 'Dangerous shell')!.when, [
        { arg: 'command', op: 'matches', value: 'rm -rf' },
        { arg: 'ticket', op: 'matches', value: '^OPS-\\d+$' },
        { arg: 'retries', op: 'gte', value: 3 },
        { arg: 'zip', op: 'in', value: ['10115', '80331'] },
        { arg: 'sudo', op: 'exists', value: false },
      ]);
      const args = { command: 'rm -rf /', ticket: 'OPS-12', retries: 3, zip: '10115' };
      assert.equal((await hold({ tool_name: 'shell.run', arguments: args })).body.status, 'denied');

      // In the list: operators in words, texts and patterns as typed (no JSON escapes), numbers bare.
      const list = (await get(admin, '/app/admin/rules')).text;
      const row = list.slice(
        list.indexOf('Dangerous shell'),
        list.indexOf('</tr>', list.indexOf('Dangerous shell')),
      );
      assert.match(row, /<code>command<\/code>\s*matches the pattern “<code>rm -rf<\/code>”/);
      assert.match(row, /matches the pattern “<code>\^OPS-\\d\+\$<\/code>”/);
      assert.match(row, /<code>retries<\/code>\s*is at least <code>3<\/code>/);
      assert.match(row, /is one of “<code>10115<\/code>”, “<code>80331<\/code>”/);
      assert.match(row, /<code>sudo<\/code>\s*is absent/);
      assert.doesNotMatch(row, /\\\\|&quot;| gte | matches &quot;/);

      // The edit form gives back what was typed, with its type.
      const form = (await get(admin, `/app/admin/rules/${encodeURIComponent('Dangerous shell')}`)).text;
      assert.match(form, /name="cond_value_1"[^>]*value="\^OPS-\\d\+\$"/s);
      assert.match(form, /name="cond_value_3"[^>]*value="10115, 80331"/s);
      assert.match(form, /name="cond_type_2"[^>]*>[\s\S]*?<option value="number"\s+selected/);

      // Every problem at once, in a summary that takes focus; the numbers typed as text are refused.
      const unchanged = await evidence();
      const wrong = await post(admin, '/app/admin/rules', {
        name: 'Dangerous shell',
        tool: 'shell.run',
        cond_arg_0: 'amount',
        cond_op_0: 'gt',
        cond_type_0: 'text',
        cond_value_0: '1000',
        cond_arg_1: 'currency',
        cond_op_1: 'eq',
        cond_type_1: 'number',
        cond_value_1: 'EUR',
        cond_arg_2: 'ok',
        cond_op_2: 'exists',
        cond_value_2: 'yes',
        effect: 'approval',
        approvers: ['nobody@acme.test'],
        action: 'save',
      });
      assert.equal(wrong.status, 422);
      assert.match(wrong.text, /id="c0-value-error">Is a number typed as text/);
      assert.match(wrong.text, /id="c1-value-error">Is not a number/);
      assert.match(wrong.text, /id="c2-value-error">Write true or false/);
      assert.match(wrong.text, /id="r-name-error">Is used by another rule/);
      assert.match(wrong.text, /id="r-approvers-error">Is not a member of the workspace/);
      assert.match(wrong.text, /<div class="error" role="alert" id="problems" tabindex="-1" autofocus>/);
      const summary = wrong.text.slice(
        wrong.text.indexOf('id="problems"'),
        wrong.text.indexOf('</ul>', wrong.text.indexOf('id="problems"')),
      );
      assert.equal(summary.match(/<li>/g)?.length, 5, 'five problems in the summary');
      assert.equal(await evidence(), unchanged);
    });

    test('preview replays the last 30 days with the draft; its Save button saves that same draft', async () => {
      const rulesBefore = (await config()).rules!;
      await hold({ tool_name: 'report.export', arguments: { rows: 10 } });
      await hold({ tool_name: 'report.export', arguments: { rows: 5000 } });
      await hold({ tool_name: 'report.export', arguments: { rows: '9000' } });
      const checked = await evidence();
      const page = await post(admin, '/app/admin/rules', {
        name: 'No big exports',
        connection: 'SDK',
        tool: 'report.*',
        agent: '',
        cond_arg_0: 'rows',
        cond_op_0: 'gt',
        cond_type_0: 'number',
        cond_value_0: '1000',
        ...emptyRows(1, 3),
        freq_more_than: '',
        freq_per: '',
        freq_by: 'tool',
        effect: 'deny',
        approvals_required: '',
        timeout_minutes: '',
        reason: 'Exports over 1000 rows are not allowed',
        action: 'preview',
      });
      assert.equal(page.status, 200, page.text.slice(0, 3000));
      assert.match(page.text, /Preview: the last 30 days/);
      assert.match(page.text, /Replayed <strong>\d+<\/strong> holds/);
      assert.match(page.text, /<strong>\d+<\/strong> would be decided differently, \d+ the same/);
      // Of the exports, the big one and the quoted one change: from the new tool's approval to this rule's
      // denial, the quoted one with the reason.
      assert.equal(page.text.split('<strong>report.export</strong>').length, 3);
      assert.match(page.text, /<span class="muted">rows is a string, not a number<\/span>/);
      assert.match(
        page.text,
        /<strong>report\.export<\/strong>[\s\S]*?New tool: needs classification[\s\S]*?status rejected"\s*>deny<\/span\s*>\s*<span class="muted">No big exports/,
      );
      assert.match(page.text, /<th>Was<\/th>\s*<th>Would be<\/th>\s*<th>Holds<\/th>/);
      // The small export still waits for an admin, with no reminders or escalation (none are set).
      assert.match(
        page.text,
        /<h3>Holds that would wait for people<\/h3>[\s\S]*?<strong>New tool: needs classification<\/strong>: \d+ holds?;\s+no reminders or escalation/,
      );
      assert.deepEqual((await config()).rules, rulesBefore, 'a preview saves nothing');
      assert.equal(await evidence(), checked);

      const draft = hiddenInputs(page.text, 'id="preview"');
      assert.ok(draft.some(([name, value]) => name === 'cond_value_0' && value === '1000'));
      assert.match(page.text, /id="preview"[\s\S]*?<form method="post" action="\/app\/admin\/rules"/);
      const saved = await post(admin, '/app/admin/rules', [
        ...draft.filter(([n]) => n !== '_csrf'),
        ['action', 'save'],
      ]);
      await changed(saved, checked, /^\/app\/admin\/rules$/);
      const rule = (await config()).rules!.find((r) => r.name === 'No big exports');
      assert.deepEqual(rule, {
        name: 'No big exports',
        connection: 'SDK',
        tool: 'report.*',
        when: [{ arg: 'rows', op: 'gt', value: 1000 }],
        effect: 'deny',
        reason: 'Exports over 1000 rows are not allowed',
      });
      assert.equal(
        (await hold({ tool_name: 'report.export', arguments: { rows: 2000 } })).body.status,
        'denied',
      );

      const asked = await post(admin, `/app/admin/rules/${encodeURIComponent('No big exports')}/delete`, {});
      assert.match(asked.text, /Delete this rule\?/);
      assert.ok((await config()).rules!.some((r) => r.name === 'No big exports'));
    });

    test('names typed into the forms are shown as text, never as markup', async () => {
      const name = '<img src=x onerror=alert(1)> "quoted"';
      const saved = await post(admin, '/app/admin/rules', {
        name,
        tool: 'markup.test',
        agent: '"><script>alert(1)</script>',
        effect: 'deny',
        reason: '<b>no</b>',
        action: 'save',
      });
      assert.equal(saved.status, 303, saved.text.slice(0, 2000));
      const list = await get(admin, '/app/admin/rules');
      assert.ok(!list.text.includes('<img src=x'));
      assert.ok(!list.text.includes('<script>alert'));
      assert.ok(!list.text.includes('<b>no</b>'));
      assert.match(list.text, /&lt;img src=x onerror=alert\(1\)&gt; &quot;quoted&quot;/);
      const form = await get(admin, `/app/admin/rules/${encodeURIComponent(name)}`);
      assert.match(form.text, /value="&lt;img src=x onerror=alert\(1\)&gt; &quot;quoted&quot;"/);
      const prefilled = await get(admin, '/app/admin/rules?new&connection=files&tool=files.delete');
      assert.match(prefilled.text, /<option value="files"\s+selected/);
      assert.match(prefilled.text, /name="tool"[^>]*value="files\.delete"/s);
    });

    test('branding: preview, validation, and the change shows in the header', async () => {
      let checked = await evidence();
      const preview = await post(admin, '/app/admin/branding', {
        name: 'Acme Preview',
        logo_url: '',
        accent_picker: '#0a6e5c',
        accent_color: '#abc',
        accent_was: '',
        picker_was: '#0a6e5c',
        action: 'preview',
      });
      assert.equal(preview.status, 200);
      assert.match(preview.text, /This is a preview/);
      assert.match(preview.text, /border-bottom:4px solid #abc/);
      assert.equal((await config()).name, 'Acme');
      assert.equal(await evidence(), checked);

      const bad = await post(admin, '/app/admin/branding', {
        name: 'Acme',
        logo_url: 'http://cdn.acme.test/logo.png',
        accent_picker: '#0a6e5c',
        accent_color: 'red',
        accent_was: '',
        picker_was: '#0a6e5c',
        action: 'save',
      });
      assert.equal(bad.status, 422);
      assert.match(bad.text, /id="b-logo-error">must be an https URL/);
      assert.match(bad.text, /id="b-accent-error">must be a hex colour/);
      assert.equal(await evidence(), checked);

      const saved = await post(admin, '/app/admin/branding', {
        name: 'Acme <Ops>',
        logo_url: 'https://cdn.acme.test/logo.png',
        accent_picker: '#0a6e5c',
        accent_color: '#123456',
        accent_was: '',
        picker_was: '#0a6e5c',
        action: 'save',
      });
      await changed(saved, checked++, /^\/app\/admin\/branding$/);
      assert.equal(saved.notice, 'saved');
      assert.deepEqual((await config()).branding, {
        logo_url: 'https://cdn.acme.test/logo.png',
        accent_color: '#123456',
      });
      const inbox = await get(approver, '/app/inbox');
      assert.match(inbox.text, /<span>Acme &lt;Ops&gt;<\/span>/);
      assert.match(inbox.text, /--accent:#123456/);
      assert.match(inbox.text, /<img src="https:\/\/cdn\.acme\.test\/logo\.png"/);

      // Only the picker changed: the picker wins; an emptied text field clears the colour.
      const picked = await post(admin, '/app/admin/branding', {
        name: 'Acme',
        logo_url: '',
        accent_picker: '#ff0000',
        accent_color: '#123456',
        accent_was: '#123456',
        picker_was: '#123456',
        action: 'save',
      });
      await changed(picked, checked++, /^\/app\/admin\/branding$/);
      assert.equal(picked.notice, 'saved');
      assert.deepEqual((await config()).branding, { logo_url: null, accent_color: '#ff0000' });
      const cleared = await post(admin, '/app/admin/branding', {
        name: 'Acme',
        logo_url: '',
        accent_picker: '#ff0000',
        accent_color: '',
        accent_was: '#ff0000',
        picker_was: '#ff0000',
        action: 'save',
      });
      await changed(cleared, checked, /^\/app\/admin\/branding$/);
      assert.equal(cleared.notice, 'saved');
      assert.equal((await config()).branding, undefined);
    });

    test('allowing a new tool asks first, and can approve the calls of it that wait', async () => {
      const waiting = [await hold({ tool_name: 'ledger.pull' }), await hold({ tool_name: 'ledger.pull' })];
      for (const held of waiting) assert.equal(held.body.status, 'pending');
      let checked = await evidence();
      const asked = await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'ledger.pull',
        classification: 'allow',
      });
      assert.equal(asked.status, 200);
      assert.match(asked.text, /<h1>Allow ledger\.pull\?<\/h1>/);
      assert.match(asked.text, /run at\s+once,\s+without anyone seeing it/);
      assert.match(asked.text, /Also approve the 2 calls of it waiting now/);
      assert.equal(await evidence(), checked, 'nothing changed before the confirmation');
      assert.equal((await hold({ tool_name: 'ledger.pull' })).body.status, 'pending');
      waiting.push(await hold({ tool_name: 'ledger.pull' }));

      checked = await evidence();
      const confirmed = await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'ledger.pull',
        classification: 'allow',
        confirmed: 'yes',
        approve_waiting: 'yes',
      });
      assert.equal(confirmed.status, 303);
      assert.equal(confirmed.location, '/app/admin/rules');
      assert.equal(confirmed.notice, 'classified:4:0:0');
      assert.equal(await evidence(), checked + 5, 'the classification, then one decision per waiting hold');
      for (const held of waiting) {
        const read = await call(t.url, 'GET', `/api/v1/holds/${held.body.id}`, { key });
        assert.equal(read.body.status, 'approved');
      }
      const notice = await follow(admin, confirmed);
      assert.match(notice.text, /Tool classified\. .*4 waiting holds approved\./);
      assert.equal((await hold({ tool_name: 'ledger.pull' })).body.status, 'allowed');

      // Confirmed without the choice: the waiting calls keep waiting.
      const other = await hold({ tool_name: 'ledger.push' });
      await post(admin, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'ledger.push',
        classification: 'allow',
        confirmed: 'yes',
      });
      assert.equal(
        (await call(t.url, 'GET', `/api/v1/holds/${other.body.id}`, { key })).body.status,
        'pending',
      );
      // A plain or forged notice shows no counts.
      assert.doesNotMatch((await get(admin, '/app/admin/rules', 'classified')).text, /approved\./);
      assert.doesNotMatch((await get(admin, '/app/admin/rules', 'classified:x')).text, /approved\./);
    });

    test('allowing a new tool leaves out of its approval the waiting calls it may not approve together', async () => {
      // Every approval of this workspace carries a passkey signature, which a classification has none of.
      const signed = await t.workspace({
        config:
          'approvals: { require_passkey: true }\nmembers:\n  - { email: admin@acme.test, name: Admin, role: admin }\n',
      });
      const ada = await signIn(signed.workspace, 'admin@acme.test');
      const waiting = [
        await hold({ tool_name: 'vault.open' }, signed.key),
        await hold({ tool_name: 'vault.open' }, signed.key),
      ];
      const confirmed = await post(ada, '/app/admin/tools', {
        connection: 'SDK',
        tool: 'vault.open',
        classification: 'allow',
        confirmed: 'yes',
        approve_waiting: 'yes',
      });
      assert.equal(confirmed.status, 303, confirmed.text.slice(0, 500));
      assert.equal(confirmed.notice, 'classified:0:0:2');
      for (const held of waiting) {
        const read = await call(t.url, 'GET', `/api/v1/holds/${held.body.id}`, { key: signed.key });
        assert.equal(read.body.status, 'pending', 'left for a signed decision');
      }
    });
  });
}
