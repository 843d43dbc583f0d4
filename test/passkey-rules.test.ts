/**
 * Issue 37, part 2: where approvals must be passkey-signed, and what happens where a passkey cannot
 * sign. `signed: true` on an approval rule and `approvals: { require_passkey: true }` in the workspace
 * file; the rules form keeps the fields it does not show; Slack, Teams and SMS cannot carry a signature,
 * so their approvals are refused with a word on where to approve (a rejection still works), and the
 * widget points to the hold's page. Without a signature no approval is recorded anywhere.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { decideFromSlack, mintEmbedToken } from '../src/services/channel-decisions.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields, lastEvidence, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startSlackStub, startSmsStub } from './support/provider-stub.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann Approver, role: approver, slack_user_id: U0ANN }
tools:
  - { connection: SDK, tool: transfer, classification: approval }
  - { connection: SDK, tool: note, classification: approval }
rules:
  - name: Transfers
    tool: transfer
    effect: approval
    approvers: [ann@acme.test]
    remind: [10m]
    signed: true
`;

for (const backend of backends) {
  describe(`passkey requirements on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let admin: Session;
    const app = appClient(() => t);

    const hold = async (tool: string) => {
      const made = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: tool, arguments: { amount: 250000, iban: 'DE89370400440532013000' } }),
      });
      assert.equal(made.status, 201);
      return made.body.id as string;
    };
    const status = async (id: string) => (await findHold(t.service.ctx.db, workspace.id, id))!;

    before(async () => {
      t = await startTestService(backend);
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      admin = await app.signIn(workspace, 'admin@acme.test');
    });
    after(() => t?.close());

    test('signed belongs to approval rules; the workspace setting applies, exports and is evidenced', async () => {
      const config = await exportConfig(t.service.ctx, workspace);
      assert.equal(config.rules?.[0]?.signed, true);
      assert.equal(config.approvals, undefined);
      assert.throws(
        () => parseConfig('rules:\n  - { name: x, tool: note, effect: allow, signed: true }\n'),
        /only an approval rule has signed/,
      );
      await applyConfig(t.service.ctx, workspace, parseConfig('approvals: { require_passkey: true }\n'));
      assert.deepEqual((await exportConfig(t.service.ctx, workspace)).approvals, { require_passkey: true });
      const entry = await lastEvidence(t, workspace);
      assert.equal(entry.type, 'config.applied');
      assert.deepEqual(entry.data.approvals, { require_passkey: true });
      assert.ok(entry.data.items_changed.includes('approvals'));
    });

    test('with require_passkey, an unsigned approval of any hold is refused and changes nothing', async () => {
      // The tool's classification asks the admins.
      const id = await hold('note');
      const refused = await app.post(admin, `/app/holds/${id}/decide`, {
        verdict: 'approve',
        back: '/app/inbox',
      });
      assert.equal(refused.status, 422);
      assert.match(refused.text, /must be signed with your passkey/);
      // Asked for as JSON (the inbox's keys), the refusal is named, so the script opens the hold's page.
      const asJson = await app.post(admin, `/app/holds/${id}/decide`, { verdict: 'approve' }, undefined, {
        Accept: 'application/json',
      });
      assert.deepEqual([asJson.status, JSON.parse(asJson.text).error], [422, 'passkey_required']);
      assert.equal((await status(id)).approvalsReceived, 0);
      // A rejection needs no signature.
      const rejected = await app.post(admin, `/app/holds/${id}/decide`, {
        verdict: 'reject',
        back: '/app/inbox',
      });
      assert.equal(rejected.status, 303);
      assert.equal((await status(id)).status, 'rejected');
      await applyConfig(t.service.ctx, workspace, parseConfig('approvals: { require_passkey: false }\n'));
    });

    test('the rules form shows and keeps signed and the reminders', async () => {
      const url = '/app/admin/rules/Transfers';
      const form = await app.get(admin, url);
      assert.match(form.text, /<option value="true"\s+selected>Required<\/option>/);
      const saved = await app.post(admin, url, [...formFields(form.text, url), ['action', 'save']]);
      assert.equal(saved.status, 303, saved.text.slice(0, 500));
      const rule = (await exportConfig(t.service.ctx, workspace)).rules?.find((r) => r.name === 'Transfers');
      assert.equal(rule?.signed, true);
      assert.deepEqual(rule?.remind, { before: ['10m'] });
    });

    test('Slack, SMS, Teams and the widget refuse an approval that must be signed; a rejection goes through', async () => {
      const id = await hold('transfer');
      const slack = await decideFromSlack(t.service.ctx, {
        slackUserId: 'U0ANN',
        holdId: id,
        verdict: 'approve',
        replayKey: 'sig-1',
      });
      assert.equal(slack.outcome, 'passkey_required');
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'ann@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, member);
      const widget = await call(t.url, 'POST', `/widget/api/holds/${id}/decision`, {
        headers: { authorization: `Bearer ${token}` },
        body: { verdict: 'approve' },
      });
      assert.equal(widget.status, 403);
      assert.equal(widget.body.error, 'passkey_required');
      assert.match(widget.body.review_url, new RegExp(`/app/holds/${id}$`));
      assert.equal((await status(id)).approvalsReceived, 0);
      const rejected = await decideFromSlack(t.service.ctx, {
        slackUserId: 'U0ANN',
        holdId: id,
        verdict: 'reject',
        replayKey: 'sig-2',
      });
      assert.equal(rejected.outcome, 'recorded');
      assert.equal((await status(id)).status, 'rejected');
    });
  });
}

for (const backend of backends) {
  describe(`messages of holds that must be signed on ${backend.name}`, { skip: backend.skip }, () => {
    test('Slack offers Review to the page, not Approve; the SMS links to the page without a reply code', async (tc) => {
      const slack = await startSlackStub();
      const sms = await startSmsStub();
      const t = await startTestService(backend, {
        env: { ...slack.env, ...sms.env, SMS_REPLIES: 'true', SLACK_SIGNING_SECRET: 'x'.repeat(32) },
      });
      tc.after(async () => {
        await t.close();
        await Promise.all([slack.close(), sms.close()]);
      });
      const { key } = await t.workspace({
        config: `notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, slack_user_id: U0ANN, phone: "+15550101", channels: [slack, sms] }
tools:
  - { connection: SDK, tool: transfer, classification: approval }
  - { connection: SDK, tool: note, classification: approval }
rules:
  - { name: Transfers, tool: transfer, effect: approval, approvers: [ann@acme.test], signed: true }
  - { name: Notes, tool: note, effect: approval, approvers: [ann@acme.test] }
`,
      });
      for (const tool of ['transfer', 'note']) {
        const made = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: tool, arguments: { amount: 250000 } }),
        });
        assert.equal(made.status, 201);
      }
      const posts = await slack.waitFor('chat.postMessage', 2);
      const actions = (tool: string) => {
        const post = posts.find((p) => JSON.stringify(p.body.blocks).includes(`${tool}(`))!;
        const block = post.body.blocks.find((b: { type: string }) => b.type === 'actions');
        return {
          ids: block.elements.map((e: { action_id: string }) => e.action_id),
          text: JSON.stringify(post.body),
        };
      };
      assert.deepEqual(actions('transfer').ids, ['review']);
      assert.match(actions('transfer').text, /Approving needs your passkey/);
      assert.deepEqual(actions('note').ids, ['approve', 'reject', 'open']);
      const texts = (await sms.waitFor('+15550101', 2)).map((c) => c.form.Body!);
      const signed = texts.find((text) => text.includes('transfer('))!;
      assert.match(signed, /Approve it with your passkey: http/);
      assert.doesNotMatch(signed, /YES \d{4}/);
      assert.match(
        texts.find((text) => text.includes('note('))!,
        /YES \d{4}/,
      );
    });
  });
}
