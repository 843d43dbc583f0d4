/**
 * Issue 23: admin changes lose nothing. The members, rules and MCP-server pages exported the whole
 * configuration outside the transaction and replaced the whole list with it, so two admins saving at
 * once, or an admin and `approvals apply`, erased each other's changes, and the evidence recorded the
 * result as a legitimate change. Now each save changes one item, from the configuration as it is inside
 * its transaction, and is refused when that item was changed after the page was read.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { ServiceError } from '../src/services/errors.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
  - { email: cid@acme.test, name: Cid, role: approver }
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test] }
`;

/** The version a page's forms carry. */
function versionOf(text: string): string {
  const version = text.match(/name="config_version" value="(\d+)"/)?.[1];
  assert.ok(version !== undefined, 'the page has no config_version field');
  return version;
}

for (const backend of backends) {
  describe(`admin changes under concurrency (${backend.name})`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let admin: Session;
    let bob: Session;
    const { get, post, signIn } = appClient(() => t);

    before(async () => {
      t = await startTestService(backend);
      ({ workspace } = await t.workspace({ config: WORKSPACE }));
      admin = await signIn(workspace, 'admin@acme.test');
      bob = await signIn(workspace, 'bob@acme.test');
    });
    after(() => t?.close());

    const config = () => exportConfig(t.service.ctx, workspace);
    const nameOf = async (email: string) => (await config()).members?.find((m) => m.email === email)?.name;
    const editForm = async (session: Session, email: string) =>
      versionOf((await get(session, `/app/admin/members/${encodeURIComponent(email)}`)).text);
    const saveMember = (session: Session, version: string, email: string, name: string) =>
      post(session, `/app/admin/members/${encodeURIComponent(email)}`, {
        name,
        role: 'approver',
        phone: '',
        slack_user_id: '',
        channels: 'email',
        config_version: version,
      });

    test('two admins changing different members at once: both changes are kept', async () => {
      for (let round = 0; round < 8; round++) {
        const [read, readByBob] = await Promise.all([
          editForm(admin, 'ann@acme.test'),
          editForm(bob, 'cid@acme.test'),
        ]);
        const [mine, bobs] = await Promise.all([
          saveMember(admin, read, 'ann@acme.test', `Ann ${round}`),
          saveMember(bob, readByBob, 'cid@acme.test', `Cid ${round}`),
        ]);
        assert.equal(mine.status, 303, mine.text.slice(0, 500));
        assert.equal(bobs.status, 303, bobs.text.slice(0, 500));
        assert.equal(await nameOf('ann@acme.test'), `Ann ${round}`, `round ${round}`);
        assert.equal(await nameOf('cid@acme.test'), `Cid ${round}`, `round ${round}`);
      }
    });

    test('two admins creating different groups at once: both groups exist', async () => {
      const read = versionOf((await get(admin, '/app/admin/members')).text);
      const group = (session: Session, name: string, members: string[]) =>
        post(session, '/app/admin/groups', { name, members, config_version: read });
      const answers = await Promise.all([
        group(admin, 'finance', ['ann@acme.test']),
        group(bob, 'legal', ['cid@acme.test']),
      ]);
      for (const answer of answers) assert.equal(answer.status, 303, answer.text.slice(0, 500));
      assert.deepEqual((await config()).groups, { finance: ['ann@acme.test'], legal: ['cid@acme.test'] });
    });

    test('the same member from the same version: the second save is refused with who changed it', async () => {
      const read = await editForm(admin, 'ann@acme.test');
      const readByBob = await editForm(bob, 'ann@acme.test');
      assert.equal((await saveMember(admin, read, 'ann@acme.test', 'Ann Admin')).status, 303);
      const refused = await saveMember(bob, readByBob, 'ann@acme.test', 'Ann Bob');
      assert.equal(refused.status, 422);
      assert.match(refused.text, /Nothing was changed/);
      assert.match(
        refused.text,
        /Member ann@acme.test was changed by Admin \(admin@acme.test\) at \d{4}-\d\d-\d\d \d\d:\d\d UTC \(version \d+\) — reload to see it\./,
      );
      assert.equal(await nameOf('ann@acme.test'), 'Ann Admin');
      // Reloaded, the same save goes through.
      const again = await saveMember(bob, await editForm(bob, 'ann@acme.test'), 'ann@acme.test', 'Ann Bob');
      assert.equal(again.status, 303);
      assert.equal(await nameOf('ann@acme.test'), 'Ann Bob');
    });

    test('removing a member someone changed since the page was read is refused', async () => {
      const read = versionOf((await get(admin, '/app/admin/members')).text);
      assert.equal((await saveMember(bob, read, 'cid@acme.test', 'Cid by Bob')).status, 303);
      const refused = await post(admin, '/app/admin/members/cid%40acme.test/delete', {
        confirm: 'yes',
        config_version: read,
      });
      assert.equal(refused.status, 422);
      assert.match(refused.text, /Member cid@acme.test was changed by Bob \(bob@acme.test\)/);
      assert.equal(await nameOf('cid@acme.test'), 'Cid by Bob');
    });

    test('an app edit racing `apply` loses nothing', async () => {
      for (let round = 0; round < 6; round++) {
        const read = await editForm(admin, 'ann@acme.test');
        const current = await config();
        // The file changes the rules only; the admin changes a member at the same moment.
        const file = {
          rules: [
            {
              name: 'Payments',
              tool: 'pay',
              effect: 'approval',
              approvers: ['ann@acme.test'],
              timeout_minutes: 10 + round,
            },
          ],
        };
        const [page] = await Promise.all([
          saveMember(admin, read, 'ann@acme.test', `Ann racing ${round}`),
          applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(file))),
        ]);
        assert.equal(page.status, 303, page.text.slice(0, 500));
        const after = await config();
        assert.equal(after.members?.find((m) => m.email === 'ann@acme.test')?.name, `Ann racing ${round}`);
        assert.equal(after.rules?.[0]?.timeout_minutes, 10 + round);
        assert.deepEqual(after.groups, current.groups);
      }
    });

    test('an app save over an item `apply` changed since the page was read is refused', async () => {
      const read = await editForm(admin, 'ann@acme.test');
      const file = (await config()).members!.map((m) =>
        m.email === 'ann@acme.test' ? { ...m, name: 'Ann from the file' } : m,
      );
      await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify({ members: file })));
      const refused = await saveMember(admin, read, 'ann@acme.test', 'Ann from the app');
      assert.equal(refused.status, 422);
      assert.match(refused.text, /Member ann@acme.test was changed by approvals apply \(CLI\)/);
      assert.equal(await nameOf('ann@acme.test'), 'Ann from the file');
    });

    test('`apply --expect-version` refuses a file read before a change, and applies one read after', async () => {
      const exported = await approvals(t.storage, ['export', '--workspace', workspace.slug]);
      assert.equal(exported.code, 0, exported.stderr);
      const version = exported.stdout.match(/^# \S+, configuration version (\d+): /)?.[1];
      assert.ok(version, exported.stdout.slice(0, 200));
      // Someone changes a member in the app after the export.
      assert.equal(
        (await saveMember(bob, await editForm(bob, 'cid@acme.test'), 'cid@acme.test', 'Cid later')).status,
        303,
      );
      const path = join(mkdtempSync(join(tmpdir(), 'apply-')), 'acme.yaml');
      writeFileSync(path, exported.stdout);
      const applyAt = (expected: string, ...more: string[]) =>
        approvals(t.storage, [
          'apply',
          '--workspace',
          workspace.slug,
          '-f',
          path,
          '--expect-version',
          expected,
          ...more,
        ]);
      const refused = await applyAt(version);
      assert.equal(refused.code, 4, refused.stderr);
      assert.match(
        refused.stderr,
        /the configuration changed since it was read \(now version \d+\): Member cid@acme.test was changed by Bob \(bob@acme.test\)/,
      );
      assert.equal(await nameOf('cid@acme.test'), 'Cid later', 'nothing applied');

      const fresh = await approvals(t.storage, ['export', '--workspace', workspace.slug]);
      writeFileSync(path, fresh.stdout.replace('name: Cid later', 'name: Cid from CI'));
      const now = fresh.stdout.match(/configuration version (\d+)/)![1]!;
      const applied = await applyAt(now, '--json');
      assert.equal(applied.code, 0, applied.stderr);
      const result = JSON.parse(applied.stdout) as { version: number; items_changed: string[] };
      assert.equal(result.version, Number(now) + 1);
      assert.deepEqual(result.items_changed, ['member:cid@acme.test']);
      assert.equal(await nameOf('cid@acme.test'), 'Cid from CI');
    });

    test('the evidence names who changed what, and a stale whole file is refused by the service too', async () => {
      const read = await editForm(admin, 'ann@acme.test');
      assert.equal((await saveMember(admin, read, 'ann@acme.test', 'Ann evidenced')).status, 303);
      const entry = await t.service.ctx.db.one<{ data: string }>(
        "SELECT data FROM evidence WHERE workspace_id = $1 AND type = 'config.applied' ORDER BY seq DESC LIMIT 1",
        [workspace.id],
      );
      const data = JSON.parse(entry!.data) as Record<string, unknown>;
      assert.equal(data.changed_by, 'Admin (admin@acme.test)');
      assert.deepEqual(data.items_changed, ['member:ann@acme.test']);
      assert.equal(typeof data.version, 'number');
      await assert.rejects(
        applyConfig(t.service.ctx, workspace, parseConfig('name: Stale'), { expectVersion: Number(read) }),
        (error) => error instanceof ServiceError && error.code === 'conflict',
      );
    });
  });
}
