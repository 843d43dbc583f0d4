/**
 * Issue 39, bulk decisions, on both backends through the app: a confirmation that lists what is decided
 * and its total, then one decision and one evidence entry per hold (marked `bulk`); approval in bulk only
 * where the hold's rule allows it (not four-eyes, passkey-signed or `bulk: false` rules, not the member's
 * own agents' holds, not an action too long to show whole), rejection always; neither on a hold another
 * member has claimed; "all matching this filter" resolves the inbox's set; viewers and other
 * workspaces' members decide nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findHold } from '../src/store/holds.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields, type Session, verifiedEvidence } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { seedHolds } from './support/seed.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: fin@acme.test, name: Fin Ance, role: approver, agents: [fin-bot] }
  - { email: vic@acme.test, name: Vic Viewer, role: viewer }
tools:
  - { connection: SDK, tool: refund, classification: approval }
  - { connection: SDK, tool: transfer, classification: approval }
  - { connection: SDK, tool: signed_transfer, classification: approval }
  - { connection: SDK, tool: payroll, classification: approval }
  - { connection: SDK, tool: pair, classification: approval }
  - { connection: SDK, tool: merge, classification: approval }
rules:
  - { name: Refunds, tool: refund, effect: approval, approvers: [role:admin, fin@acme.test] }
  - { name: Transfers, tool: transfer, effect: approval, approvers: [role:admin, fin@acme.test], approvals_required: 2 }
  - { name: Signed, tool: signed_transfer, effect: approval, approvers: [role:admin], signed: true }
  - { name: Payroll, tool: payroll, effect: approval, approvers: [role:admin], bulk: false }
  - { name: Pairs, tool: pair, effect: approval, approvers: [role:admin, fin@acme.test], approvals_required: 2, bulk: true }
`;

/** The hold ids a confirmation page lists to be decided, in order (its table's links). */
const listed = (page: string) =>
  [...(page.split('<h2>Left')[0] ?? '').matchAll(/<td>\s*<a href="\/app\/holds\/(svc_pa_[\w-]+)">/g)].map(
    (m) => m[1],
  );

for (const backend of backends) {
  describe(`bulk decisions on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let ada: Session;
    const app = appClient(() => t);

    const seed = (tool: string, count: number, make: (i: number) => object = () => ({})) =>
      seedHolds(t.service.ctx, workspace, count, (i) => ({ toolName: tool, ...make(i) }));
    const statusOf = async (id: string) => (await findHold(t.service.ctx.db, workspace.id, id))!.status;
    const decisionEntries = async (ids: string[]) => {
      const rows = await t.service.ctx.db.all<{ type: string; data: string }>(
        "SELECT type, data FROM evidence WHERE workspace_id = $1 AND type LIKE 'hold.%' ORDER BY seq",
        [workspace.id],
      );
      return rows
        .map((row) => ({ type: row.type, data: JSON.parse(row.data) }))
        .filter((entry) => ids.includes(entry.data.hold) && 'verdict' in entry.data);
    };
    const bulk = (session: Session, fields: Record<string, string | string[]>) =>
      app.post(session, '/app/inbox/bulk', { back: '/app/inbox', ...fields });

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      ada = await app.signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    test('bulk approve: a confirmation with the total, then one decision and one entry per hold', async () => {
      const ids = await seed('refund', 5, (i) => ({ arguments: { amount: 0.1 * (i + 1), currency: 'EUR' } }));
      const confirm = await bulk(ada, { hold: ids, verdict: 'approve' });
      assert.equal(confirm.status, 200);
      assert.match(confirm.text, /Approve 5 holds\?/);
      assert.match(confirm.text, /<strong>Total:<\/strong> 5 holds · 1\.5 EUR/);
      assert.deepEqual(listed(confirm.text), ids);
      assert.match(confirm.text, /<span class="muted">SDK · live<\/span>/, 'the connection and environment');
      for (const id of ids) assert.equal(await statusOf(id), 'pending', 'the confirmation decides nothing');

      const decided = await app.post(ada, '/app/inbox/bulk', formFields(confirm.text, '/app/inbox/bulk'));
      assert.equal(decided.status, 303);
      assert.equal(decided.location, '/app/inbox');
      assert.equal(decided.notice, 'bulk_approved:5:0');
      for (const id of ids) assert.equal(await statusOf(id), 'approved');
      const entries = await decisionEntries(ids);
      assert.equal(entries.length, 5, 'one entry per hold');
      assert.deepEqual(
        entries.map((entry) => [entry.type, entry.data.hold, entry.data.channel, entry.data.bulk]),
        ids.map((id) => ['hold.approved', id, 'inbox', true]),
      );
      const shown = await app.follow(ada, decided);
      assert.match(shown.text, /Your approval is recorded on 5 holds\./);
      await verifiedEvidence(t, key);
    });

    test('four-eyes, signed and bulk: false rules are left out of bulk approval, and rejected in bulk', async () => {
      const [transfer] = await seed('transfer', 1);
      const [signed] = await seed('signed_transfer', 1);
      const [payroll] = await seed('payroll', 1);
      const [pair] = await seed('pair', 1);
      const [refund] = await seed('refund', 1);
      const all = [transfer!, signed!, payroll!, pair!, refund!];
      const confirm = await bulk(ada, { hold: all, verdict: 'approve' });
      assert.deepEqual(listed(confirm.text), [pair, refund], 'four eyes only where the rule says bulk: true');
      assert.match(confirm.text, /It needs 2 approvals: approve it on its own page\./);
      assert.match(confirm.text, /must be signed with your passkey/);
      assert.match(confirm.text, /Its rule keeps it out of bulk approval/);

      // The decision checks again, whatever the form sends.
      const approved = await bulk(ada, { hold: all, verdict: 'approve', step: 'decide' });
      assert.equal(approved.notice, 'bulk_approved:2:3');
      assert.deepEqual(
        await Promise.all(all.map(statusOf)),
        ['pending', 'pending', 'pending', 'pending', 'approved'],
        'the pair has one approval of two',
      );
      assert.equal((await findHold(t.service.ctx.db, workspace.id, pair!))!.approvalsReceived, 1);

      const rejectConfirm = await bulk(ada, { hold: all, verdict: 'reject' });
      assert.deepEqual(
        listed(rejectConfirm.text),
        [transfer, signed, payroll],
        'the rest is not theirs any more',
      );
      const rejected = await bulk(ada, {
        hold: [transfer!, signed!, payroll!],
        verdict: 'reject',
        step: 'decide',
      });
      assert.equal(rejected.notice, 'bulk_rejected:3:0');
      for (const id of [transfer!, signed!, payroll!]) assert.equal(await statusOf(id), 'rejected');
      await verifiedEvidence(t, key);
    });

    test("the member's own agent's holds and actions too long to show are not approved in bulk", async () => {
      const fin = await app.signIn(workspace, 'fin@acme.test');
      const [own] = await seed('refund', 1, () => ({ agent: { id: 'fin-bot', label: null } }));
      const [long] = await seed('refund', 1, () => ({ arguments: { memo: 'x'.repeat(2000) } }));
      const [other] = await seed('refund', 1);
      const confirm = await bulk(fin, { hold: [own!, long!, other!], verdict: 'approve' });
      assert.deepEqual(listed(confirm.text), [other]);
      assert.match(confirm.text, /An agent that acts for you requested it/);
      assert.match(confirm.text, /too long to show whole in a list/);
      const decided = await bulk(fin, { hold: [own!, long!, other!], verdict: 'approve', step: 'decide' });
      assert.equal(decided.notice, 'bulk_approved:1:2');
      assert.deepEqual(await Promise.all([own!, long!, other!].map(statusOf)), [
        'pending',
        'pending',
        'approved',
      ]);
      // Too long to approve in a list, not to reject.
      const rejected = await bulk(fin, { hold: [long!], verdict: 'reject', step: 'decide' });
      assert.equal(rejected.notice, 'bulk_rejected:1:0');
      assert.equal(await statusOf(own!), 'pending', 'nor is it rejected by its own member');
    });

    test('holds another member is on are left out, checked again as each is decided, until released', async () => {
      const fin = await app.signIn(workspace, 'fin@acme.test');
      const claim = (session: Session, id: string, action = 'claim') =>
        app.post(session, `/app/holds/${id}/${action}`, { back: '/app/inbox' });
      const [theirs, mine, free, late] = (await seed('refund', 4)) as [string, string, string, string];
      assert.equal((await claim(fin, theirs)).notice, 'claimed');
      assert.equal((await claim(ada, mine)).notice, 'claimed');
      for (const verdict of ['approve', 'reject']) {
        const confirm = await bulk(ada, { hold: [theirs, mine, free], verdict });
        assert.deepEqual(listed(confirm.text), [mine, free], 'her own claim is no reason to leave it');
        assert.match(confirm.text, /Claimed by Fin Ance until <time datetime="[^"]+">/);
      }
      // A claim made after the confirmation is respected when deciding, whatever the form sends.
      const confirm = await bulk(ada, { hold: [mine, free, late], verdict: 'approve' });
      assert.deepEqual(listed(confirm.text), [mine, free, late]);
      assert.equal((await claim(fin, late)).notice, 'claimed');
      const decided = await app.post(ada, '/app/inbox/bulk', formFields(confirm.text, '/app/inbox/bulk'));
      assert.equal(decided.notice, 'bulk_approved:2:1');
      const forced = await bulk(ada, { hold: [theirs], verdict: 'reject', step: 'decide' });
      assert.equal(forced.notice, 'bulk_rejected:0:1');
      assert.deepEqual(await Promise.all([theirs, mine, free, late].map(statusOf)), [
        'pending',
        'approved',
        'approved',
        'pending',
      ]);
      // Released, they are anyone's again.
      for (const id of [theirs, late]) assert.equal((await claim(fin, id, 'release')).notice, 'released');
      const released = await bulk(ada, { hold: [theirs, late], verdict: 'reject' });
      assert.deepEqual(listed(released.text), [theirs, late]);
      const rejected = await app.post(ada, '/app/inbox/bulk', formFields(released.text, '/app/inbox/bulk'));
      assert.equal(rejected.notice, 'bulk_rejected:2:0');
      for (const id of [theirs, late]) assert.equal(await statusOf(id), 'rejected');
      await verifiedEvidence(t, key);
    });

    test('"all matching this filter" decides the inbox\'s set: the filter\'s holds waiting for the member', async () => {
      const refunds = await seed('refund', 3);
      const merges = await seed('merge', 2);
      // Earlier tests left one refund waiting too (Fin's own agent's, which Ada may decide).
      const pending = await t.service.ctx.db.all<{ id: string }>(
        "SELECT id FROM holds WHERE workspace_id = $1 AND status = 'pending' AND tool_name = 'refund'",
        [workspace.id],
      );
      const waiting = pending.map((row) => row.id);
      assert.ok(refunds.every((id) => waiting.includes(id)));
      // "Select all … matching this filter" sends no verdict: a page asks which, then confirms.
      const choice = await bulk(ada, { all: '1', tool: 'ref*' });
      assert.equal(choice.status, 200);
      assert.match(choice.text, new RegExp(`Decide ${waiting.length} holds`));
      const fields = formFields(choice.text, '/app/inbox/bulk');
      const confirm = await app.post(ada, '/app/inbox/bulk', [...fields, ['verdict', 'reject']]);
      assert.equal(confirm.status, 200);
      assert.deepEqual(new Set(listed(confirm.text)), new Set(waiting));
      // The confirmation posts the ids it listed, not the filter: a hold arriving meanwhile is not decided.
      const [late] = await seed('refund', 1);
      const decided = await app.post(ada, '/app/inbox/bulk', formFields(confirm.text, '/app/inbox/bulk'));
      assert.equal(decided.notice, `bulk_rejected:${waiting.length}:0`);
      for (const id of refunds) assert.equal(await statusOf(id), 'rejected');
      for (const id of merges) assert.equal(await statusOf(id), 'pending');
      assert.equal(await statusOf(late!), 'pending');
      assert.equal((await bulk(ada, { all: '1', env: 'nope', verdict: 'reject' })).status, 400);
      // A filter is never decided unseen: only the confirmation's listed holds are.
      const [unseen] = await seed('refund', 1);
      const blind = await bulk(ada, { all: '1', tool: 'ref*', verdict: 'reject', step: 'decide' });
      assert.equal(blind.status, 400);
      assert.equal(await statusOf(unseen!), 'pending');
    });

    test('viewers, other workspaces and forms without a token decide nothing; bad input changes nothing', async () => {
      const ids = await seed('merge', 2);
      const vic = await app.signIn(workspace, 'vic@acme.test');
      assert.equal((await bulk(vic, { hold: ids, verdict: 'approve', step: 'decide' })).status, 403);
      assert.equal((await bulk(vic, { hold: ids, verdict: 'reject' })).status, 403);

      const other = await t.workspace({ config: WORKSPACE });
      const stranger = await app.signIn(other.workspace, 'admin@acme.test');
      const foreign = await bulk(stranger, { hold: ids, verdict: 'reject' });
      assert.match(foreign.text, /Nothing to reject/);
      assert.match(foreign.text, /2 holds: not found\./);
      const tried = await bulk(stranger, { hold: ids, verdict: 'reject', step: 'decide' });
      assert.equal(tried.notice, 'bulk_rejected:0:2');

      assert.equal(
        (await app.post(ada, '/app/inbox/bulk', { hold: ids, verdict: 'reject' }, null)).status,
        403,
      );
      assert.equal((await bulk(ada, { hold: ['not-a-hold'], verdict: 'reject' })).status, 400);
      assert.equal((await bulk(ada, { verdict: 'reject' })).status, 400);
      assert.equal((await bulk(ada, { hold: ids, verdict: 'maybe' })).status, 400);
      const tooMany = Array.from({ length: 501 }, (_, i) => `svc_pa_${String(i).padStart(20, '0')}`);
      const capped = await bulk(ada, { hold: tooMany, verdict: 'reject' });
      assert.equal(capped.status, 400);
      assert.match(capped.text, /At most 500 holds/);
      const longComment = await bulk(ada, {
        hold: ids,
        verdict: 'reject',
        step: 'decide',
        comment: 'x'.repeat(2001),
      });
      assert.equal(longComment.status, 400);
      for (const id of ids) assert.equal(await statusOf(id), 'pending');
    });
  });
}
