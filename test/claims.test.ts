/**
 * Issue 39, "I'm on it", on both backends through the app: a member claims a hold and the others see it
 * (claimsOf, and the JSON the list's script reads); the claim stands against the others, is released by
 * its member or an admin, runs out at the rule's `claim.minutes` and ends with a decision; it halts
 * escalation only where the rule says `claim.halts_escalation`, and escalation goes on after it.
 * Viewers and other workspaces' members claim nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { claimsOf } from '../src/services/claims.ts';
import { findHold } from '../src/store/holds.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session, verifiedEvidence } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { seedHolds } from './support/seed.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const MIN = 60_000;
const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann Approver, role: approver }
  - { email: bob@acme.test, name: Bob Approver, role: approver }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer }
  - { email: olga@acme.test, name: Olga Oncall, role: approver }
groups: { oncall: [olga@acme.test] }
tools:
  - { connection: SDK, tool: deploy, classification: approval }
  - { connection: SDK, tool: restart, classification: approval }
  - { connection: SDK, tool: refund, classification: approval }
rules:
  - { name: Deploys, tool: deploy, effect: approval, approvers: [ann@acme.test, bob@acme.test], timeout_minutes: 120, escalate: [{ after: 15m, to: [group:oncall] }], claim: { minutes: 20, halts_escalation: true } }
  - { name: Restarts, tool: restart, effect: approval, approvers: [ann@acme.test, bob@acme.test], timeout_minutes: 120, escalate: [{ after: 15m, to: [group:oncall] }] }
  - { name: Refunds, tool: refund, effect: approval, approvers: [ann@acme.test, bob@acme.test], claim: { minutes: 5 } }
`;

const JSON_ACCEPT = { accept: 'application/json' };

for (const backend of backends) {
  describe(`claims on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let ann: Session;
    let bob: Session;
    let ada: Session;
    const app = appClient(() => t);

    const seed = async (tool: string) =>
      (await seedHolds(t.service.ctx, workspace, 1, () => ({ toolName: tool })))[0]!;
    const claims = (ids: string[]) => claimsOf(t.service.ctx, workspace.id, ids);
    const post = (session: Session, id: string, action: 'claim' | 'release', json = true) =>
      app.post(
        session,
        `/app/holds/${id}/${action}`,
        { back: '/app/inbox' },
        undefined,
        json ? JSON_ACCEPT : {},
      );
    const escalated = async (id: string) =>
      (await findHold(t.service.ctx.db, workspace.id, id))!.approvers.includes('group:oncall');
    const entriesOf = async (id: string) =>
      (
        await t.service.ctx.db.all<{ type: string; data: string }>(
          'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        )
      )
        .map((row) => ({ type: row.type, data: JSON.parse(row.data) }))
        .filter((entry) => entry.data.hold === id && entry.type.match(/^hold\.(claimed|released)$/));

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      ann = await app.signIn(workspace, 'ann@acme.test');
      bob = await app.signIn(workspace, 'bob@acme.test');
      ada = await app.signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    test("I'm on it: shown to the others, theirs to keep, released by its member or an admin, evidenced", async () => {
      const id = await seed('refund');
      const claimed = await post(ann, id, 'claim');
      assert.equal(claimed.status, 200);
      const until = t.clock.now() + 5 * MIN;
      const answer = JSON.parse(claimed.text);
      assert.equal(answer.claimed.name, 'Ann Approver');
      assert.ok(Math.abs(Date.parse(answer.claimed.until) - until) < 5_000, 'until the rule’s 5 minutes');
      const shown = (await claims([id])).get(id)!;
      assert.equal(shown.name, 'Ann Approver');

      const taken = await post(bob, id, 'claim');
      assert.equal(taken.status, 409);
      assert.equal(JSON.parse(taken.text).claimed.name, 'Ann Approver', 'Bob is told who is on it');
      assert.equal((await post(bob, id, 'release')).status, 409, 'only Ann or an admin releases it');
      assert.equal((await claims([id])).get(id)?.name, 'Ann Approver');

      const released = await post(ada, id, 'release', false);
      assert.equal(released.status, 303);
      assert.equal(released.location, `/app/inbox?hold=${id}`, 'the hold stays selected');
      assert.equal(released.notice, 'released');
      assert.equal((await claims([id])).size, 0);

      const again = await post(ann, id, 'claim', false);
      assert.equal(again.notice, 'claimed');
      assert.match((await app.follow(ann, again)).text, /You are on it/);
      assert.deepEqual(JSON.parse((await post(ann, id, 'release')).text), { claimed: null });

      const entries = await entriesOf(id);
      assert.deepEqual(
        entries.map((entry) => [entry.type, entry.data.member.email, entry.data.claimed_by?.email ?? null]),
        [
          ['hold.claimed', 'ann@acme.test', null],
          ['hold.released', 'admin@acme.test', 'ann@acme.test'],
          ['hold.claimed', 'ann@acme.test', null],
          ['hold.released', 'ann@acme.test', null],
        ],
      );
      assert.equal(entries[0]!.data.halts_escalation, false);
      await verifiedEvidence(t, key);
    });

    test('a claim runs out at the rule’s minutes (30 without), and ends when the hold is decided', async () => {
      const id = await seed('refund');
      await post(ann, id, 'claim');
      await t.clock.advance(5 * MIN + 1_000);
      assert.equal((await claims([id])).size, 0, 'run out');
      assert.equal((await post(bob, id, 'claim')).status, 200, 'free for Bob');
      assert.equal((await claims([id])).get(id)?.name, 'Bob Approver');
      await decideAs(t, workspace.id, id, 'approve', 'bob@acme.test');
      assert.equal((await claims([id])).size, 0, 'decided');
      assert.equal((await post(ann, id, 'claim')).status, 409, 'a decided hold is not claimed');

      const restart = await seed('restart');
      const answer = JSON.parse((await post(ann, restart, 'claim')).text);
      assert.ok(Math.abs(Date.parse(answer.claimed.until) - (t.clock.now() + 30 * MIN)) < 5_000);
      await post(ann, restart, 'release');
    });

    test('a claim halts escalation only where the rule says so; escalation goes on after it', async () => {
      const deploy = await seed('deploy');
      const restart = await seed('restart');
      const later = await seed('deploy');
      for (const id of [deploy, restart, later]) assert.equal((await post(ann, id, 'claim')).status, 200);
      assert.equal((await claims([deploy])).get(deploy)?.name, 'Ann Approver');

      await t.clock.advance(16 * MIN);
      assert.equal(await escalated(restart), true, 'no halt without the rule saying so');
      assert.equal(await escalated(deploy), false, 'halted while Ann is on it');
      assert.equal(await escalated(later), false);

      await post(ann, deploy, 'release');
      await t.settled();
      assert.equal(await escalated(deploy), true, 'released: escalation goes on at once');
      assert.equal(await escalated(later), false);

      await t.clock.advance(5 * MIN);
      assert.equal(await escalated(later), true, 'run out after 20 minutes: escalation goes on');
    });

    test('viewers, other workspaces and forms without a token claim nothing', async () => {
      const id = await seed('refund');
      const vic = await app.signIn(workspace, 'vic@acme.test');
      assert.equal((await post(vic, id, 'claim')).status, 403);
      assert.equal((await post(vic, id, 'claim', false)).status, 403);
      const other = await t.workspace({ config: WORKSPACE });
      const stranger = await app.signIn(other.workspace, 'ann@acme.test');
      assert.equal((await post(stranger, id, 'claim')).status, 404);
      assert.equal((await post(stranger, id, 'release')).status, 404);
      assert.equal((await app.post(ann, `/app/holds/${id}/claim`, {}, null)).status, 403);
      assert.equal((await post(ann, 'svc_pa_nothing', 'claim')).status, 404);
      // Ada is an admin but not among the refunds' approvers: she may release a claim, not make one.
      assert.equal((await post(ada, id, 'claim')).status, 403);
      assert.equal((await claims([id])).size, 0);
      assert.equal((await entriesOf(id)).length, 0);
    });
  });
}
