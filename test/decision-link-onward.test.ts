/**
 * Issue 39: a decision link, once its hold is settled for its reader (decided through the link, in the
 * app, by others, or expired), says so in its heading — never "Approve this action?" — and leads on:
 * to the reader's next waiting hold (soonest deadline first, theirs only) and to the inbox.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: fin@acme.test, name: Finn Finance, role: approver }
  - { email: max@acme.test, name: Max Money, role: approver }
  - { email: val@acme.test, name: Val Viewer, role: viewer }
rules:
  - { name: Soon, tool: pay_soon, effect: approval, approvers: [fin@acme.test], timeout_minutes: 30 }
  - { name: Mid, tool: pay_mid, effect: approval, approvers: [fin@acme.test], timeout_minutes: 60 }
  - { name: Late, tool: pay_late, effect: approval, approvers: [fin@acme.test], timeout_minutes: 120 }
  - { name: Pair, tool: pay_pair, effect: approval, approvers: [fin@acme.test, max@acme.test], approvals_required: 2, timeout_minutes: 90 }
  - { name: Max only, tool: pay_max, effect: approval, approvers: [max@acme.test], timeout_minutes: 5 }
`;

const heading = (text: string) => /<h1>([^<]*)<\/h1>/.exec(text)?.[1]?.trim();
const nextHref = (text: string) => /<a href="([^"]+)">Next hold waiting for you<\/a>/.exec(text)?.[1] ?? null;

for (const backend of backends) {
  describe(`a settled decision link leads on (${backend.name})`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    async function hold(key: string, tool: string) {
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: tool }),
      });
      assert.equal(answer.body.status, 'pending', answer.text);
      return answer.body.id as string;
    }

    async function linkPath(workspace: Workspace, id: string, email: string) {
      const { db } = t.service.ctx;
      const member = (await findMemberByEmail(db, workspace.id, email))!;
      const found = (await findHold(db, workspace.id, id))!;
      const url = await mintDecisionLink(t.service.ctx, {
        hold: found,
        memberId: member.id,
        channel: 'email',
      });
      return new URL(url).pathname;
    }

    async function send(path: string, form?: Record<string, string>) {
      // A new minute each time: the page's own limits are not what this test is about.
      await t.clock.advance(60_000);
      const answer = await fetch(t.url + path, {
        method: form ? 'POST' : 'GET',
        redirect: 'manual',
        ...(form && {
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams(form).toString(),
        }),
      });
      return { status: answer.status, text: await answer.text() };
    }

    test('after deciding: the outcome as heading, the next hold waiting for the reader, the inbox', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      await hold(key, 'pay_max'); // the soonest deadline of all, but Max's alone
      const late = await hold(key, 'pay_late');
      const mid = await hold(key, 'pay_mid');
      const soon = await hold(key, 'pay_soon');

      const path = await linkPath(workspace, mid, 'fin@acme.test');
      const asked = await send(path);
      assert.equal(heading(asked.text), 'Approve this action?');
      assert.equal(nextHref(asked.text), null, 'no way on while the question is open');

      const decided = await send(path, { verdict: 'approve' });
      assert.equal(decided.status, 200);
      assert.equal(heading(decided.text), 'You approved. The action is approved.');
      assert.equal(nextHref(decided.text), `/app/holds/${soon}`);
      assert.match(decided.text, /\(2 waiting\)/);
      assert.match(decided.text, /<a href="\/app\/inbox">Open the inbox<\/a>/);

      // Opened again: the outcome, and still the way on; once the soonest is decided, the next one.
      await decideAs(t, workspace.id, soon, 'approve', 'fin@acme.test');
      const again = await send(path);
      assert.equal(heading(again.text), 'This action was approved.');
      assert.doesNotMatch(again.text, /Approve this action\?|name="verdict"/);
      assert.equal(nextHref(again.text), `/app/holds/${late}`);
      assert.match(again.text, /\(1 waiting\)/);

      await decideAs(t, workspace.id, late, 'reject', 'fin@acme.test');
      const done = await send(path);
      assert.equal(nextHref(done.text), null);
      assert.match(done.text, /Nothing else is waiting for you\./);
      assert.match(done.text, /<a href="\/app\/inbox">Open the inbox<\/a>/);
    });

    test('answered in the app first, a link to a hold still waiting for others says so, with no form', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const pair = await hold(key, 'pay_pair');
      const soon = await hold(key, 'pay_soon');
      const path = await linkPath(workspace, pair, 'fin@acme.test');
      await decideAs(t, workspace.id, pair, 'approve', 'fin@acme.test');

      const page = await send(path);
      assert.equal(page.status, 200);
      assert.equal(heading(page.text), 'You have already answered; the action waits for other approvers.');
      assert.match(page.text, /<title>Already decided · Approvals<\/title>/);
      assert.doesNotMatch(page.text, /name="verdict"/);
      assert.equal(nextHref(page.text), `/app/holds/${soon}`);

      // Max, who has not answered, is still asked.
      const maxs = await send(await linkPath(workspace, pair, 'max@acme.test'));
      assert.equal(heading(maxs.text), 'Approve this action?');
    });

    test('a link that expired or was decided by others leads on too; a viewer is led to no hold', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const max = await hold(key, 'pay_max');
      const mid = await hold(key, 'pay_mid');
      const fins = await linkPath(workspace, mid, 'fin@acme.test');
      const maxs = await linkPath(workspace, max, 'max@acme.test');
      const pair = await hold(key, 'pay_pair');
      await decideAs(t, workspace.id, mid, 'reject', 'admin@acme.test');
      const rejected = await send(fins);
      assert.equal(heading(rejected.text), 'This action was rejected.');
      assert.equal(nextHref(rejected.text), `/app/holds/${pair}`);

      await t.clock.advance(6 * 60_000);
      const expired = await send(maxs);
      assert.equal(heading(expired.text), 'This request expired without a decision.');
      assert.equal(nextHref(expired.text), `/app/holds/${pair}`);

      // A viewer is led to no hold: nothing is theirs to decide.
      const vals = await linkPath(workspace, pair, 'val@acme.test');
      await decideAs(t, workspace.id, pair, 'reject', 'max@acme.test');
      const viewer = await send(vals);
      assert.equal(heading(viewer.text), 'This action was rejected.');
      assert.equal(nextHref(viewer.text), null);
      await hold(key, 'pay_soon');
      assert.equal(nextHref((await send(vals)).text), null);
    });
  });
}
