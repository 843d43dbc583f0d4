/**
 * Issue 41, part 3: the kill switch. An admin freezes a workspace (API, command line, app): every new
 * hold, through the Core API or the MCP proxy, is denied with the admin's reason; approved MCP calls
 * wait and run once it is unfrozen; pending holds stay pending. Both changes are evidenced and sent as
 * webhook events, and the app and the status page say so. Agent keys, approvers and other workspaces
 * cannot freeze or unfreeze it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Envelope } from '../src/domain/envelope.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { recordDecision } from '../src/services/decide-hold.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { openChain } from '../src/services/evidence.ts';
import { getHold } from '../src/services/read-hold.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { findWorkspace, type Workspace } from '../src/store/workspaces.ts';
import { appClient, formFields } from './support/app-client.ts';
import { backends, postgres, type Storage } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { call, rpcFailure, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { type Receiver, startReceiver } from './support/receiver.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const REASON = 'Incident 12: an agent is paying the wrong supplier';

const configWith = (upstreamUrl: string, hookUrl: string) =>
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  '  - { email: ann@acme.test, name: Ann, role: approver }\n' +
  `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstreamUrl}" }\n` +
  'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n' +
  '  - { connection: SDK, tool: read_balance, classification: allow }\n' +
  '  - { connection: SDK, tool: send_invoice, classification: approval }\n' +
  `webhook: { url: "${hookUrl}" }\n`;

for (const backend of backends) {
  describe(`the kill switch on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let receiver: Receiver;
    const clients: Client[] = [];
    const api = (method: string, path: string, options: Parameters<typeof call>[3] = {}) =>
      call(t.url, method, path, options);

    before(async () => {
      [upstream, receiver] = await Promise.all([startRecordingUpstream(), startReceiver()]);
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', DEADLINE_SWEEP_MS: '3600000' },
      });
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await Promise.all([upstream?.close(), receiver?.close()]);
      }
    });

    /** A workspace with an MCP server, a webhook, an agent key and an admin key. */
    async function setUp() {
      const { workspace, key } = await t.workspace({ config: configWith(upstream.url, receiver.url) });
      const admin = await createApiKey(t.service.ctx, { workspace, env: 'live', scope: 'admin' });
      return { workspace, key, adminKey: admin.key, adminKeyId: admin.id };
    }

    async function callRecord(key: string, text: string) {
      const client = new Client({ name: 'freeze-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      clients.push(client);
      return client.callTool({ name: 'record', arguments: { text } });
    }

    const evidenceOf = async (workspace: Workspace, type: string) =>
      (
        await t.service.ctx.db.all<{ data: string }>(
          'SELECT data FROM evidence WHERE workspace_id = $1 AND type = $2 ORDER BY seq',
          [workspace.id, type],
        )
      ).map((row) => JSON.parse(row.data) as Record<string, unknown>);

    /**
     * Approved, but no worker told: the service's workers sweep once an hour here, so the call runs only
     * when something wakes them (a freeze does; it must find the workspace frozen and leave the call).
     */
    async function approveUnannounced(workspace: Workspace, holdId: string) {
      const { ctx } = t.service;
      const member = await findMemberByEmail(ctx.db, workspace.id, 'admin@acme.test');
      const result = await ctx.db.transaction(async (tx) =>
        recordDecision(tx, ctx, await openChain(tx, ctx, workspace.id), {
          workspaceId: workspace.id,
          holdId,
          memberId: member!.id,
          verdict: 'approve',
          channel: 'inbox',
        }),
      );
      assert.equal(result.hold.status, 'approved');
    }

    const frozenAt = async (workspace: Workspace) =>
      (await findWorkspace(t.service.ctx.db, workspace.id))!.frozenAt;

    test('agent keys, other workspaces and no key cannot freeze or unfreeze; nothing changes', async () => {
      const { workspace, key } = await setUp();
      const other = await setUp();
      for (const path of ['/api/v1/workspace/freeze', '/api/v1/workspace/unfreeze']) {
        const body = { reason: 'let me in', workspace: workspace.slug };
        assert.equal((await api('POST', path, { key, body })).status, 403, path);
        assert.equal((await api('POST', path, { body })).status, 401, path);
        // Another workspace's admin key acts on its own workspace only, and says so when asked for this one.
        const foreign = await api('POST', path, { key: other.adminKey, body });
        assert.equal(foreign.status, 422, path);
        assert.equal(foreign.body.issues[0].field, 'workspace');
      }
      assert.equal(await frozenAt(workspace), null);
      assert.equal(await frozenAt(other.workspace), null);
      assert.deepEqual(await evidenceOf(workspace, 'workspace.frozen'), []);
      const blank = await api('POST', '/api/v1/workspace/freeze', {
        key: other.adminKey,
        body: { reason: ' ' },
      });
      assert.equal(blank.status, 422);
    });

    test('frozen: new holds are denied with the reason (API and MCP), pending ones stay, approved calls wait', async () => {
      const { workspace, key, adminKey, adminKeyId } = await setUp();
      const pending = await api('POST', '/api/v1/holds', { key, body: submission() });
      assert.equal(pending.body.status, 'pending');
      const held = (await callRecord(key, 'approved before')) as { content: { text: string }[] };
      const heldRef = (JSON.parse(held.content[1]!.text).service as Envelope).reference;
      await approveUnannounced(workspace, heldRef);

      const frozen = await api('POST', '/api/v1/workspace/freeze', {
        key: adminKey,
        body: { reason: REASON, workspace: workspace.slug },
      });
      assert.equal(frozen.status, 200);
      assert.equal(frozen.body.frozen, true);
      assert.equal(frozen.body.changed, true);
      assert.match(frozen.body.by, new RegExp(adminKeyId));
      const again = await api('POST', '/api/v1/workspace/freeze', { key: adminKey, body: { reason: 'x' } });
      assert.equal(again.body.changed, false);
      assert.equal(again.body.reason, REASON);

      // A tool the rules allow is denied too, with the admin's reason.
      const denied = await api('POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'read_balance' }),
      });
      assert.equal(denied.status, 201);
      assert.equal(denied.body.status, 'denied');
      const record = await api('GET', `/api/v1/holds/${denied.body.id}`, { key });
      assert.equal(record.body.decision.reason, `The workspace is frozen: ${REASON}`);
      assert.equal(record.body.decision.channel, 'rule');

      const error = await rpcFailure(callRecord(key, 'new while frozen'));
      assert.equal(error.code, -32003);
      const envelope = (error.data as { service: Envelope }).service;
      assert.equal(envelope.status, 'denied');
      assert.match(envelope.message, new RegExp(`The workspace is frozen: ${REASON}`));

      // Pending holds stay pending; an approval is refused (no agent may act on one), so is the member's
      // approval in bulk; a rejection is recorded. A call approved before the freeze and not yet run
      // (here: recorded without waking the workers, as on an instance that died before running it) waits.
      assert.equal((await getHold(t.service.ctx, workspace.id, pending.body.id)).status, 'pending');
      const refused = await decideAs(t, workspace.id, pending.body.id, 'approve');
      assert.equal(refused.outcome, 'frozen');
      assert.equal((await getHold(t.service.ctx, workspace.id, pending.body.id)).status, 'pending');
      const approvals = await evidenceOf(workspace, 'hold.approved');
      assert.deepEqual(
        approvals.map((entry) => entry.hold),
        [heldRef],
      );
      const rejected = await decideAs(t, workspace.id, pending.body.id, 'reject');
      assert.equal(rejected.outcome, 'recorded');
      assert.equal(rejected.hold.status, 'rejected');
      await t.settled();
      await t.settled();
      const waiting = await getHold(t.service.ctx, workspace.id, heldRef);
      assert.equal(waiting.status, 'approved');
      assert.equal(waiting.execution, null);
      assert.equal(upstream.calls.filter((c) => c.arguments.text === 'approved before').length, 0);
      assert.equal(upstream.calls.filter((c) => c.arguments.text === 'new while frozen').length, 0);

      const unfrozen = await api('POST', '/api/v1/workspace/unfreeze', { key: adminKey });
      assert.equal(unfrozen.body.frozen, false);
      assert.equal(unfrozen.body.changed, true);
      const ran = await until('the approved call to run', async () => {
        const hold = await getHold(t.service.ctx, workspace.id, heldRef);
        return hold.execution?.status === 'executed' ? hold : undefined;
      });
      assert.equal(ran.status, 'executed');
      assert.equal(upstream.calls.filter((c) => c.arguments.text === 'approved before').length, 1);
      // Unfrozen, the rules decide again, and the same call is a new request (not the freeze's denial).
      const allowed = await api('POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'read_balance' }),
      });
      assert.equal(allowed.body.status, 'allowed');
      const repeat = (await callRecord(key, 'new while frozen')) as { content: { text: string }[] };
      assert.equal((JSON.parse(repeat.content[1]!.text).service as Envelope).status, 'held');

      // Evidenced with who and why, and sent to the webhook.
      const [entry] = await evidenceOf(workspace, 'workspace.frozen');
      assert.equal(entry!.reason, REASON);
      assert.match(String(entry!.by), new RegExp(adminKeyId));
      assert.equal((await evidenceOf(workspace, 'workspace.unfrozen')).length, 1);
      const verified = await api('GET', '/api/v1/audit/verify', { key });
      assert.equal(verified.body.valid, true);
      const events = await receiver.waitFor(2, {
        filter: (r) => String(r.headers['x-service-event']).startsWith('workspace.'),
      });
      const bodies = events.map(
        (r) => JSON.parse(r.body) as { event: string; data: Record<string, unknown> },
      );
      assert.deepEqual(
        bodies.map((b) => b.event),
        ['workspace.frozen', 'workspace.unfrozen'],
      );
      assert.equal(bodies[0]!.data.reason, REASON);
      assert.equal(bodies[0]!.data.orgId, workspace.id);
    });

    test('the command line freezes and unfreezes, in the database and through the API', async () => {
      const { workspace, key, adminKey } = await setUp();
      const frozen = await approvals(t.storage, [
        'workspace',
        'freeze',
        workspace.slug,
        '--reason',
        REASON,
        '--json',
      ]);
      assert.equal(frozen.code, 0, frozen.stderr);
      assert.equal(JSON.parse(frozen.stdout).frozen, true);
      const denied = await api('POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'read_balance' }),
      });
      assert.equal(denied.body.status, 'denied');
      const unfrozen = await approvals(t.storage, ['workspace', 'unfreeze', workspace.slug]);
      assert.equal(unfrozen.code, 0, unfrozen.stderr);
      assert.match(unfrozen.stdout, /Unfroze/);
      assert.equal(await frozenAt(workspace), null);
      assert.equal((await approvals(t.storage, ['workspace', 'freeze', workspace.slug])).code, 2);

      const remote = (args: string[], apiKey: string) =>
        approvals(t.storage, args, { APPROVALS_URL: t.url, APPROVALS_KEY: apiKey });
      const viaApi = await remote(['workspace', 'freeze', workspace.slug, '--reason', REASON], adminKey);
      assert.equal(viaApi.code, 0, viaApi.stderr);
      assert.notEqual(await frozenAt(workspace), null);
      const agent = await remote(['workspace', 'unfreeze', workspace.slug], key);
      assert.notEqual(agent.code, 0);
      assert.match(agent.stderr, /403/);
      const wrongSlug = await remote(['workspace', 'unfreeze', 'someone-else'], adminKey);
      assert.notEqual(wrongSlug.code, 0);
      assert.notEqual(await frozenAt(workspace), null);
      assert.equal((await remote(['workspace', 'unfreeze', workspace.slug], adminKey)).code, 0);
      assert.equal(await frozenAt(workspace), null);
    });

    test('the app: admins freeze and unfreeze after confirming; approvers cannot; the banners say so', async () => {
      const { workspace, key } = await setUp();
      const { get, post, signIn, follow } = appClient(t);
      const admin = await signIn(workspace, 'admin@acme.test');
      const ann = await signIn(workspace, 'ann@acme.test');
      const pending = await api('POST', '/api/v1/holds', { key, body: submission() });

      assert.equal((await get(ann, '/app/admin/freeze')).status, 403);
      assert.equal((await post(ann, '/app/admin/freeze', { reason: 'no', confirm: 'yes' })).status, 403);
      assert.equal(await frozenAt(workspace), null);

      const asked = await post(admin, '/app/admin/freeze', { reason: REASON });
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Freeze the workspace\?/);
      assert.equal(await frozenAt(workspace), null);
      const done = await post(admin, '/app/admin/freeze', { reason: REASON, confirm: 'yes' });
      assert.equal(done.status, 303);
      assert.notEqual(await frozenAt(workspace), null);
      assert.match((await follow(admin, done)).text, /Unfreeze/);
      const [entry] = await evidenceOf(workspace, 'workspace.frozen');
      assert.match(String(entry!.by), /admin@acme\.test/);

      // The inbox of every member, and the public status page, say it is frozen.
      const inbox = await get(ann, '/app/inbox');
      assert.match(inbox.text, /This workspace is frozen/);
      assert.match(inbox.text, /Incident 12/);
      const status = await fetch(`${t.url}/a/${pending.body.id}`).then((r) => r.text());
      assert.match(status, /This workspace is frozen/);
      assert.doesNotMatch(status, /Incident 12/);

      // Nobody approves while frozen, from any channel; the decision link is not used up by the refusal.
      const id = pending.body.id as string;
      const decided = await post(admin, `/app/holds/${id}/decide`, { verdict: 'approve' });
      assert.equal(decided.status, 409);
      assert.match(decided.text, /nothing is approved until an admin unfreezes it/);
      const preview = await post(admin, '/app/inbox/bulk', {
        verdict: 'approve',
        hold: id,
        back: '/app/inbox',
      });
      assert.match(preview.text, /The workspace is frozen: nothing is approved until an admin unfreezes it/);
      const bulk = await post(admin, '/app/inbox/bulk', formFields(preview.text, '/app/inbox/bulk'));
      assert.notEqual(bulk.status, 500);
      const adminMember = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, adminMember);
      const widget = await api('POST', `/widget/api/holds/${id}/decision`, {
        headers: { authorization: `Bearer ${token}` },
        body: { verdict: 'approve' },
      });
      assert.equal(widget.status, 409);
      assert.equal(widget.body.error, 'workspace_frozen');
      const held = await getHold(t.service.ctx, workspace.id, id);
      const link = await mintDecisionLink(t.service.ctx, {
        hold: held,
        memberId: adminMember.id,
        channel: 'email',
      });
      const byLink = await fetch(link, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ verdict: 'approve' }),
      });
      assert.equal(byLink.status, 409);
      assert.equal((await getHold(t.service.ctx, workspace.id, id)).status, 'pending');
      assert.deepEqual(await evidenceOf(workspace, 'hold.approved'), []);

      assert.equal((await post(ann, '/app/admin/freeze/unfreeze', { confirm: 'yes' })).status, 403);
      assert.notEqual(await frozenAt(workspace), null);
      const thawed = await post(admin, '/app/admin/freeze/unfreeze', { confirm: 'yes' });
      assert.equal(thawed.status, 303);
      assert.equal(await frozenAt(workspace), null);
      assert.doesNotMatch((await get(ann, '/app/inbox')).text, /This workspace is frozen/);
      // Unfrozen, the same link approves.
      const approved = await fetch(link, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ verdict: 'approve' }),
        redirect: 'manual',
      });
      assert.ok(approved.status < 400, `the link approves once unfrozen (${approved.status})`);
      assert.equal((await getHold(t.service.ctx, workspace.id, id)).status, 'approved');
    });
  });
}

describe('a freeze on one instance holds on another at once (PostgreSQL)', { skip: postgres.skip }, () => {
  let storage: Storage;
  let a: TestService;
  let b: TestService;

  before(async () => {
    storage = await postgres.create();
    a = await startTestService(postgres, { storage });
    b = await startTestService(postgres, { storage });
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await storage?.drop();
  });

  test('frozen on A, the next submission on B is denied; unfrozen on B, A decides by the rules', async () => {
    const { workspace, key } = await a.workspace({
      config:
        'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
        'tools:\n  - { connection: SDK, tool: read_balance, classification: allow }\n',
    });
    const admin = await createApiKey(a.service.ctx, { workspace, env: 'live', scope: 'admin' });
    const body = () => submission({ tool_name: 'read_balance' });
    assert.equal((await call(b.url, 'POST', '/api/v1/holds', { key, body: body() })).body.status, 'allowed');
    const frozen = await call(a.url, 'POST', '/api/v1/workspace/freeze', {
      key: admin.key,
      body: { reason: REASON },
    });
    assert.equal(frozen.status, 200);
    assert.equal((await call(b.url, 'POST', '/api/v1/holds', { key, body: body() })).body.status, 'denied');
    await call(b.url, 'POST', '/api/v1/workspace/unfreeze', { key: admin.key });
    assert.equal((await call(a.url, 'POST', '/api/v1/holds', { key, body: body() })).body.status, 'allowed');
  });
});
