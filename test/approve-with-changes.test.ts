/**
 * Issue 41, part 4: approve with changes. A rule's `editable` arguments may be changed by an approver;
 * the rule's conditions are asked again on the new values; the changed call is what the Core API
 * returns and the MCP proxy runs; the evidence keeps both; on four eyes an edit restarts the count; a
 * passkey signs the changed action. Tried as approvers, other workspaces' approvers, viewers and
 * agents would, on both backends.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { canonicalJson } from '../packages/sdk/src/canonical-json.ts';
import { ApprovalsClient } from '../packages/sdk/src/index.ts';
import { receiptActionInput } from '../packages/sdk/src/receipt.ts';
import type { Verdict } from '../src/domain/hold.ts';
import { decideHold } from '../src/services/decide-hold.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { decideFromWidget, mintEmbedToken } from '../src/services/channel-decisions.ts';
import { sha256Hex } from '../src/services/hashing.ts';
import { decisionChallenge } from '../src/services/passkeys.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, unescapeHtml } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { freePort, type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';
import { enrolTestPasskey } from './support/test-passkey.ts';
import { until } from './support/wait.ts';

const ARGS = { amount: 4000, memo: 'Invoice 7', iban: 'DE02120300000000202051' };

const config = (upstream: string) => `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: bea@acme.test, name: Bea, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstream}" }
tools:
  - { connection: SDK, tool: pay, classification: approval }
  - { connection: SDK, tool: pay2, classification: approval }
  - { connection: SDK, tool: pay_signed, classification: approval }
  - { connection: Recorder, tool: record, classification: approval }
rules:
  - name: Payments
    tool: pay
    when: [{ arg: amount, op: lte, value: 5000 }]
    effect: approval
    approvers: [role:admin, ann@acme.test]
    editable: [amount, memo]
  - { name: No refunds, tool: "pay*", when: [{ arg: memo, op: matches, value: "^refund" }], effect: deny }
  - { name: Two, tool: pay2, effect: approval, approvals_required: 2, editable: [amount] }
  - { name: Signed, tool: pay_signed, effect: approval, signed: true, editable: [amount] }
  - { name: Records, connection: Recorder, tool: record, effect: approval, editable: [text] }
webhook: { url: "http://127.0.0.1:9/hook" }
`;

for (const backend of backends) {
  describe(`approve with changes on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let workspace: Workspace;
    let key: string;
    const clients: Client[] = [];
    const app = appClient(() => t);

    before(async () => {
      upstream = await startRecordingUpstream();
      const port = await freePort();
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', PORT: String(port), PUBLIC_URL: `http://localhost:${port}` },
      });
      ({ workspace, key } = await t.workspace({ config: config(upstream.url) }));
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await t?.close();
      await upstream?.close();
    });

    const submit = async (tool: string, args: Record<string, unknown> = ARGS) => {
      const made = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: tool, arguments: args }),
      });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      assert.equal(made.body.status, 'pending');
      return made.body.id as string;
    };
    const memberId = async (email: string, ws = workspace) =>
      (await findMemberByEmail(t.service.ctx.db, ws.id, email))!.id;
    const decide = async (
      holdId: string,
      email: string,
      changes?: Record<string, unknown>,
      extra: { verdict?: Verdict; passkey?: unknown; shown?: string } = {},
    ) =>
      decideHold(t.service.ctx, {
        workspaceId: workspace.id,
        holdId,
        memberId: await memberId(email),
        verdict: extra.verdict ?? 'approve',
        channel: 'inbox',
        ...(changes && { changes }),
        ...(extra.passkey !== undefined && { passkey: extra.passkey }),
        ...(extra.shown !== undefined && { shown: extra.shown }),
      });
    const stored = async (id: string) => (await findHold(t.service.ctx.db, workspace.id, id))!;
    const entries = async (holdId: string) =>
      (
        await t.service.ctx.db.all<{ seq: number; type: string; data: string }>(
          'SELECT seq, type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        )
      )
        .map((row) => ({ seq: Number(row.seq), type: row.type, data: JSON.parse(row.data) }))
        .filter((entry) => entry.data.hold === holdId);
    const record = async (id: string) => (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;
    const hash = (value: unknown) => sha256Hex(canonicalJson(value));

    /** Nothing changed: still pending, no approval counted, no entry after the submission. */
    async function unchanged(id: string) {
      const hold = await stored(id);
      assert.deepEqual([hold.status, hold.approvalsReceived, hold.changedArguments], ['pending', 0, null]);
      assert.deepEqual(
        (await entries(id)).map((entry) => entry.type),
        ['hold.submitted'],
      );
    }

    test('an edit within editable is approved: the API returns the changed call, the evidence keeps both', async () => {
      const id = await submit('pay');
      const result = await decide(id, 'ann@acme.test', { amount: 3500, memo: 'Invoice 7, less 500' });
      assert.equal(result.outcome, 'recorded');
      const changed = { ...ARGS, amount: 3500, memo: 'Invoice 7, less 500' };
      const body = await record(id);
      assert.equal(body.status, 'approved');
      assert.equal(body.arguments_changed, true);
      assert.deepEqual(body.decision.changed_arguments, changed);
      // The receipt is of the changed call: a payment API checks what it is asked to run against it.
      const claims = JSON.parse(Buffer.from(body.receipt.split('.')[1], 'base64url').toString());
      assert.equal(
        claims.action_sha256,
        sha256Hex(receiptActionInput({ connection: 'SDK', tool_name: 'pay', arguments: changed })),
      );
      const [submitted, approved] = await entries(id);
      assert.deepEqual(submitted!.data.arguments, ARGS, 'the submission as it was sent');
      assert.equal(approved!.type, 'hold.approved');
      assert.deepEqual(approved!.data.changed_arguments, changed);
      assert.deepEqual(approved!.data.arguments_sha256, { submitted: hash(ARGS), changed: hash(changed) });
      // The webhook's hold.approved says what to run too.
      const events = await t.service.ctx.db.all<{ body: string }>(
        `SELECT body FROM webhook_events WHERE workspace_id = $1 AND event = 'hold.approved'`,
        [workspace.id],
      );
      const event = events.map((row) => JSON.parse(row.body)).find((body) => body.id === id);
      assert.deepEqual(event.data.decision.changed_arguments, changed);
      // A plain approval says nothing changed.
      const plain = await submit('pay');
      await decide(plain, 'ann@acme.test');
      const plainBody = await record(plain);
      assert.equal(plainBody.arguments_changed, false);
      assert.deepEqual(Object.keys(plainBody.decision).sort(), [
        'channel',
        'decided_at',
        'reason',
        'verdict',
      ]);
    });

    test('a change to an argument the rule does not name is refused, and nothing changes', async () => {
      const id = await submit('pay');
      await assert.rejects(decide(id, 'ann@acme.test', { iban: 'GB33BUKB20201555555555' }), (error: Error) =>
        /iban.*not an argument this rule lets an approver change/.test(error.message),
      );
      await unchanged(id);
    });

    test('an edit the rule would no longer match, or a deny rule would, is refused', async () => {
      const id = await submit('pay');
      await assert.rejects(
        decide(id, 'ann@acme.test', { amount: 6000 }),
        /no longer matches the rule "Payments"/,
      );
      await assert.rejects(
        decide(id, 'ann@acme.test', { memo: 'refund of invoice 7' }),
        /would be denied by the rule "No refunds"/,
      );
      // Changes go with an approval only.
      await assert.rejects(decide(id, 'ann@acme.test', { amount: 10 }, { verdict: 'reject' }), /approval/);
      await unchanged(id);
    });

    test('an approver of another workspace and a viewer cannot decide, with or without changes', async () => {
      const id = await submit('pay');
      const other = await t.workspace({
        config: 'members:\n  - { email: ann@acme.test, name: Ann, role: admin }\n',
      });
      const outsider = await decideHold(t.service.ctx, {
        workspaceId: workspace.id,
        holdId: id,
        memberId: await memberId('ann@acme.test', other.workspace),
        verdict: 'approve',
        channel: 'inbox',
        changes: { amount: 1 },
      });
      assert.equal(outsider.outcome, 'not_an_approver');
      assert.equal((await decide(id, 'vic@acme.test', { amount: 1 })).outcome, 'not_an_approver');
      await unchanged(id);
    });

    test('four eyes: an edit restarts the count; the earlier approver approves the changed call', async () => {
      const id = await submit('pay2');
      await decide(id, 'admin@acme.test');
      assert.equal((await stored(id)).approvalsReceived, 1);
      await decide(id, 'bea@acme.test', { amount: 3000 });
      let hold = await stored(id);
      assert.deepEqual([hold.status, hold.approvalsReceived], ['pending', 1]);
      const [, first, edit] = await entries(id);
      assert.equal(edit!.type, 'hold.approval_recorded');
      assert.deepEqual(edit!.data.superseded_approvals, [first!.seq]);
      assert.deepEqual(edit!.data.approvals, { required: 2, received: 1 });
      // The next approver sees what they approve: the change beside what was submitted.
      const page = await app.get(await app.signIn(workspace, 'admin@acme.test'), `/app/holds/${id}`);
      assert.match(
        unescapeHtml(page.text),
        /Changed by an approver[\s\S]*amount<\/code>:\s*3000\s*<span class="muted">\(submitted: 4000\)/,
      );
      // The page says what it showed: the changed call.
      const changedHash = hash({ ...ARGS, amount: 3000 });
      assert.ok(
        page.text.includes(`name="shown" value="${changedHash}"`),
        'the page offers the decision, showing the changed call',
      );
      // A plain approval not shown the change (a page from before, a list line) is refused; nothing counts.
      for (const shown of [undefined, hash(ARGS)])
        await assert.rejects(
          decide(id, 'admin@acme.test', undefined, { shown }),
          /changed since it was shown/,
        );
      // With changes of their own too: the memo Bea kept would be approved unseen.
      for (const shown of [undefined, hash(ARGS)])
        await assert.rejects(
          decide(id, 'admin@acme.test', { amount: 2000 }, { shown }),
          /changed since it was shown/,
        );
      assert.equal((await stored(id)).approvalsReceived, 1);
      // Ada's approval was of the call before: she may approve the changed one, which completes it.
      assert.equal(
        (await decide(id, 'admin@acme.test', undefined, { shown: changedHash })).outcome,
        'recorded',
      );
      hold = await stored(id);
      assert.equal(hold.status, 'approved');
      const approved = (await entries(id)).at(-1)!;
      assert.deepEqual(approved.data.approvals_before, [edit!.seq]);
      const body = await record(id);
      assert.equal(body.status, 'approved', 'the evidence bears the approval out');
      assert.deepEqual(body.decision.changed_arguments, { ...ARGS, amount: 3000 });
    });

    test('a passkey signs the changed action: a signature over the submitted one does not verify', async () => {
      const assertion = await enrolTestPasskey(t, {
        id: 'cred-ada',
        workspaceId: workspace.id,
        memberId: await memberId('admin@acme.test'),
        counting: true,
      });
      const id = await submit('pay_signed');
      const hold = await stored(id);
      await assert.rejects(
        decide(
          id,
          'admin@acme.test',
          { amount: 100 },
          { passkey: assertion(decisionChallenge(hold, 'approve')) },
        ),
        /challenge mismatch/,
      );
      await unchanged(id);
      const edited = { ...hold, arguments: { ...ARGS, amount: 100 } };
      const result = await decide(
        id,
        'admin@acme.test',
        { amount: 100 },
        { passkey: assertion(decisionChallenge(edited, 'approve')) },
      );
      assert.equal(result.outcome, 'recorded');
      const approved = (await entries(id)).at(-1)!;
      assert.equal(approved.data.passkey.credential_id, 'cred-ada');
      assert.deepEqual(approved.data.changed_arguments, edited.arguments);
    });

    test('the TypeScript SDK returns the changed arguments as what to run, and says they changed', async () => {
      const sdk = new ApprovalsClient({ apiKey: key, baseUrl: t.url });
      const submitted = submission({ tool_name: 'pay', arguments: ARGS });
      const waiting = sdk.hold(submitted);
      const id = await until(
        'the hold to be stored',
        async () =>
          (
            await t.service.ctx.db.one<{ id: string }>('SELECT id FROM holds WHERE idempotency_key = $1', [
              submitted.idempotency_key,
            ])
          )?.id,
      );
      await decide(id, 'ann@acme.test', { amount: 100 });
      const result = await waiting;
      assert.deepEqual([result.approved, result.changed], [true, true]);
      assert.deepEqual(result.arguments, { ...ARGS, amount: 100 });
      const read = await sdk.waitForDecision(id);
      assert.deepEqual([read.changed, read.arguments], [true, { ...ARGS, amount: 100 }]);
      // Approved as submitted: what to run is what was submitted.
      const plain = await sdk.hold({ ...submission({ tool_name: 'pay', arguments: ARGS }), wait: false });
      assert.deepEqual([plain.changed, plain.arguments], [false, ARGS]);
    });

    test('the app: the hold page offers the editable arguments only, filled; the form approves with changes', async () => {
      const id = await submit('pay');
      const ann = await app.signIn(workspace, 'ann@acme.test');
      const page = await app.get(ann, `/app/holds/${id}`);
      assert.match(page.text, /Approve with changes/);
      assert.match(page.text, /name="change\.amount"\s+value="4000"/);
      assert.match(page.text, /name="change\.memo"\s+value="Invoice 7"/);
      assert.doesNotMatch(page.text, /name="change\.iban"/);
      const decide = (session: typeof ann, fields: Record<string, string>) =>
        app.post(session, `/app/holds/${id}/decide`, {
          verdict: 'approve_changed',
          back: '/app/inbox',
          ...fields,
        });
      // A number that is not one, and an argument the rule does not name: refused, nothing changes.
      const wrong = await decide(ann, { 'change.amount': 'lots', 'change.memo': 'x' });
      assert.equal(wrong.status, 422);
      assert.match(unescapeHtml(wrong.text), /amount must be a number/);
      assert.equal(
        (await decide(ann, { 'change.iban': 'GB00' })).status,
        303,
        'a box it does not offer is ignored',
      );
      // That approved as submitted: a new hold for the rest.
      assert.equal((await record(id)).arguments_changed, false);
      const next = await submit('pay');
      const decideNext = (session: typeof ann, fields: Record<string, string>) =>
        app.post(session, `/app/holds/${next}/decide`, {
          verdict: 'approve_changed',
          back: '/app/inbox',
          ...fields,
        });
      // A viewer, and an admin of another workspace, cannot.
      const vic = await app.signIn(workspace, 'vic@acme.test');
      assert.equal((await decideNext(vic, { 'change.amount': '1' })).status, 403);
      const other = await t.workspace();
      const outsider = await app.signIn(other.workspace, 'admin@acme.test');
      assert.equal((await decideNext(outsider, { 'change.amount': '1' })).status, 404);
      await unchanged(next);
      const over = await decideNext(ann, { 'change.amount': '9000' });
      assert.equal(over.status, 422);
      assert.match(unescapeHtml(over.text), /no longer matches the rule "Payments"/);
      await unchanged(next);
      const done = await decideNext(ann, { 'change.amount': '1200', 'change.memo': 'Invoice 7, part 1' });
      assert.equal(done.status, 303);
      assert.deepEqual((await record(next)).decision.changed_arguments, {
        ...ARGS,
        amount: 1200,
        memo: 'Invoice 7, part 1',
      });
    });

    test('the decision link page offers Approve with changes, and its form approves with them', async () => {
      const id = await submit('pay');
      const url = await mintDecisionLink(t.service.ctx, {
        hold: await stored(id),
        memberId: await memberId('ann@acme.test'),
        channel: 'email',
      });
      const path = new URL(url).pathname;
      const send = async (form?: Record<string, string>) => {
        await t.clock.advance(60_000);
        const answer = await fetch(t.url + path, {
          method: form ? 'POST' : 'GET',
          ...(form && {
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams(form).toString(),
          }),
        });
        return { status: answer.status, text: unescapeHtml(await answer.text()) };
      };
      const page = await send();
      assert.match(page.text, /Approve with changes/);
      assert.match(page.text, /name="change\.amount"\s+value="4000"/);
      const over = await send({ verdict: 'approve_changed', 'change.amount': '5001' });
      assert.equal(over.status, 422);
      assert.match(over.text, /no longer matches the rule "Payments"/);
      await unchanged(id);
      const done = await send({
        verdict: 'approve_changed',
        'change.amount': '5000',
        'change.memo': 'Invoice 7',
      });
      assert.equal(done.status, 200);
      const body = await record(id);
      assert.equal(body.decision.channel, 'email');
      assert.deepEqual(body.decision.changed_arguments, { ...ARGS, amount: 5000 });
    });

    test('the widget: its API names the editable arguments and takes changes; a changed call is not approved from a message that showed it as submitted', async () => {
      const ann = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'ann@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, ann);
      const id = await submit('pay');
      const listed = await fetch(`${t.url}/widget/api/holds`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const line = ((await listed.json()) as { holds: { id: string; editable: string[] }[] }).holds.find(
        (hold) => hold.id === id,
      );
      assert.deepEqual(line?.editable, ['amount', 'memo']);
      const post = (body: unknown) =>
        fetch(`${t.url}/widget/api/holds/${id}/decision`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      assert.equal((await post({ verdict: 'approve', changes: ['amount'] })).status, 422);
      const refused = await post({ verdict: 'approve', changes: { iban: 'GB00' } });
      assert.equal(refused.status, 422);
      await unchanged(id);
      const done = await post({ verdict: 'approve', changes: { amount: 10 } });
      assert.equal(done.status, 200);
      assert.deepEqual((await record(id)).decision.changed_arguments, { ...ARGS, amount: 10 });
      // Four eyes, changed by one approver: a channel that showed the call as submitted may not decide.
      const two = await submit('pay2');
      await decide(two, 'bea@acme.test', { amount: 3000 });
      const admin = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const fromWidget = await decideFromWidget(t.service.ctx, admin, {
        holdId: two,
        verdict: 'approve',
        comment: null,
      });
      assert.equal(fromWidget.outcome, 'review_required');
      assert.deepEqual([(await stored(two)).approvalsReceived, (await stored(two)).status], [1, 'pending']);
      // The widget lists it for review on its page, not with the submitted values to approve.
      const { token: adminToken } = await mintEmbedToken(t.service.ctx, admin);
      const widgetLine = (
        (await (
          await fetch(`${t.url}/widget/api/holds`, { headers: { authorization: `Bearer ${adminToken}` } })
        ).json()) as { holds: { id: string; complete: boolean; changed: boolean; values: object }[] }
      ).holds.find((hold) => hold.id === two)!;
      assert.deepEqual([widgetLine.complete, widgetLine.changed, widgetLine.values], [false, true, {}]);
    });

    test('bulk approval leaves out a hold an approver changed, in the confirmation as when deciding', async () => {
      const two = await submit('pay2');
      await decide(two, 'bea@acme.test', { amount: 3000 });
      const ada = await app.signIn(workspace, 'admin@acme.test');
      const preview = await app.post(ada, '/app/inbox/bulk', {
        verdict: 'approve',
        hold: two,
        back: '/app/inbox',
      });
      assert.equal(preview.status, 200);
      assert.match(unescapeHtml(preview.text), /An approver changed it: approve it on its own page/);
      // Sent anyway (a confirmation made before the change): left out under the decision's lock too.
      const decided = await app.post(ada, '/app/inbox/bulk', {
        verdict: 'approve',
        step: 'decide',
        hold: two,
        back: '/app/inbox',
      });
      assert.equal(decided.status, 303, decided.text);
      assert.deepEqual([(await stored(two)).approvalsReceived, (await stored(two)).status], [1, 'pending']);
    });

    /** A held MCP call of `record`: its reference. */
    async function heldCall(text: string) {
      const client = new Client({ name: 'edit-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      clients.push(client);
      const result = (await client.callTool({ name: 'record', arguments: { text } })) as {
        content: { text?: string }[];
      };
      return JSON.parse(result.content[1]!.text!).service.reference as string;
    }

    test('a database writer who sets changed arguments gets nothing run: not as the evidence has it', async () => {
      const id = await heldCall('pay 5 to DE-2');
      await t.service.ctx.db.run('UPDATE holds SET changed_arguments = $1 WHERE id = $2', [
        JSON.stringify({ text: 'pay 5000 to GB-ATTACKER' }),
        id,
      ]);
      // Approved from a page that showed the forged call (a plain approval not shown it is refused).
      await decide(id, 'admin@acme.test', undefined, { shown: hash({ text: 'pay 5000 to GB-ATTACKER' }) });
      await until('the call to be refused', async () => (await stored(id)).status === 'failed');
      await t.settled();
      assert.equal(
        ((await stored(id)).execution!.outcome as { reason: string }).reason,
        'call_not_as_submitted',
      );
      assert.deepEqual(
        upstream.calls.filter((c) => /DE-2|ATTACKER/.test(String(c.arguments.text))),
        [],
      );
    });

    test('the MCP proxy runs the approved call with the changes', async () => {
      const id = await heldCall('pay 900 to DE-1');
      await decide(id, 'admin@acme.test', { text: 'pay 90 to DE-1' });
      await until('the approved call to run', async () => (await stored(id)).status === 'executed');
      await t.settled();
      assert.deepEqual(
        upstream.calls.filter((c) => String(c.arguments.text).endsWith('DE-1')),
        [{ name: 'record', arguments: { text: 'pay 90 to DE-1' } }],
      );
      const executed = (await entries(id)).at(-1)!;
      assert.equal(executed.type, 'hold.executed');
      assert.equal(executed.data.arguments_sha256, hash({ text: 'pay 90 to DE-1' }));
      const body = await record(id);
      assert.deepEqual(
        [body.arguments_changed, body.decision.changed_arguments],
        [true, { text: 'pay 90 to DE-1' }],
      );
    });
  });
}
