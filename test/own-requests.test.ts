/**
 * Issue 37, part 3: nobody chooses who may not approve. A hold requested through an OAuth client a
 * member allowed, or through an API key bound to a member, is that member's own request: they may not
 * approve it (decisions.md, Amendments 2026-11-29). A bound key's holds carry its agent identity (a
 * body or header naming another is refused), and a workspace can refuse holds from unbound keys.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, unescapeHtml, verifiedEvidence } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { call, rpcFailure, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { oauthClient } from './support/oauth-client.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

interface Envelope {
  status: string;
  reference: string;
}
const envelopeOf = (result: unknown) => {
  const { content } = result as { content: { text?: string }[] };
  return (JSON.parse(content[1]!.text!) as { service: Envelope }).service;
};

for (const backend of backends) {
  describe(`own requests on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    const app = appClient(() => t);
    const clients: Client[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await upstream?.close();
      }
    });
    // Registering and authorizing an OAuth client count against the address's anonymous quota.
    beforeEach(() => t.clock.advance(61_000, { runWorkers: false }));

    // Admin and Alice are admins, Bob an approver; `record` waits for an admin, `pay` for Bob or Alice.
    const config = (extra = '') => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: alice@acme.test, name: Alice, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstream.url}" }
tools:
  - { connection: Recorder, tool: record, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [bob@acme.test, alice@acme.test] }
${extra}`;

    async function connect(url: string, token: string, headers: Record<string, string> = {}) {
      const client = new Client({ name: 'own-requests', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${token}`, ...headers } },
        }),
      );
      clients.push(client);
      return client;
    }

    async function evidence(workspace: Workspace) {
      const rows = await t.service.ctx.db.all<{ type: string; data: string }>(
        'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
        [workspace.id],
      );
      return rows.map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, any> }));
    }

    const holdsOf = async (workspace: Workspace) =>
      Number(
        (await t.service.ctx.db.one<{ n: unknown }>(
          'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1',
          [workspace.id],
        ))!.n,
      );

    const pay = (key: string, agent: string) =>
      call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'pay', arguments: { amount: 90000 }, agent_identity: { id: agent } }),
      });

    test('a client an admin allowed is her own: she cannot approve what it asked for, another admin can', async () => {
      const { workspace, key } = await t.workspace({ config: config() });
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const resource = `${t.url}/mcp/${workspace.slug}/rec`;
      const { tokens } = await oauthClient(t.url).connect(admin, resource);
      const assistant = await connect(resource, tokens.access_token);
      const held = envelopeOf(
        await assistant.callTool({ name: 'record', arguments: { text: 'wire 90000 to attacker' } }),
      );
      assert.equal(held.status, 'held');

      assert.equal((await decideAs(t, workspace.id, held.reference, 'approve')).outcome, 'own_request');
      // Nor does the app offer her the decision, nor count the hold as waiting for her.
      const page = await app.get(admin, `/app/holds/${held.reference}`);
      assert.match(unescapeHtml(page.text), /An agent that acts for you requested this action/);
      assert.ok(!(await app.get(admin, '/app/inbox')).text.includes(held.reference), 'not in her inbox');
      const alice = await app.signIn(workspace, 'alice@acme.test');
      assert.ok((await app.get(alice, '/app/inbox')).text.includes(held.reference), "in Alice's inbox");
      assert.equal(
        (await decideAs(t, workspace.id, held.reference, 'approve', 'alice@acme.test')).outcome,
        'recorded',
      );

      // The submission's evidence names the member the client acts for.
      const submitted = (await evidence(workspace)).find(
        (entry) => entry.type === 'hold.submitted' && entry.data.hold === held.reference,
      );
      assert.deepEqual(submitted?.data.requested_for, {
        id: submitted?.data.requested_for.id,
        email: 'admin@acme.test',
        through: 'oauth',
      });
      await verifiedEvidence(t, key);
    });

    test("a bound key's holds carry its agent and are its owner's own; naming another agent is refused", async () => {
      const { workspace, key: unbound } = await t.workspace({ config: config() });
      const bound = await createApiKey(t.service.ctx, {
        workspace,
        env: 'live',
        agent: 'billing-bot',
        owner: 'bob@acme.test',
      });
      assert.equal(bound.agent, 'billing-bot');
      assert.equal(bound.owner, 'bob@acme.test');
      const created = (await evidence(workspace)).find(
        (entry) => entry.type === 'key.created' && entry.data.key_id === bound.id,
      );
      assert.equal(created?.data.agent, 'billing-bot');
      assert.equal(created?.data.owner, 'bob@acme.test');

      // Naming another member's assistant (to keep her from approving) is refused, and nothing is stored.
      const before = await holdsOf(workspace);
      const other = await pay(bound.key, 'alice-assistant');
      assert.equal(other.status, 422, other.text);
      assert.equal(other.body.error, 'validation_failed');
      assert.deepEqual(
        other.body.issues.map((issue: { field: string }) => issue.field),
        ['agent_identity.id'],
      );
      assert.doesNotMatch(other.text, /alice-assistant|billing-bot/);
      assert.equal(await holdsOf(workspace), before);

      const own = await pay(bound.key, 'billing-bot');
      assert.equal(own.status, 201, own.text);
      assert.equal(
        (await decideAs(t, workspace.id, own.body.id, 'approve', 'bob@acme.test')).outcome,
        'own_request',
      );
      const submitted = (await evidence(workspace)).find(
        (entry) => entry.type === 'hold.submitted' && entry.data.hold === own.body.id,
      );
      assert.equal(submitted?.data.bound_key, bound.id);
      assert.equal(submitted?.data.requested_for.email, 'bob@acme.test');
      assert.equal(submitted?.data.requested_for.through, 'key');
      assert.equal(
        (await decideAs(t, workspace.id, own.body.id, 'approve', 'alice@acme.test')).outcome,
        'recorded',
      );

      // An unbound key of a workspace that does not require bound ones still names its agent freely,
      // and nobody is its owner.
      const free = await pay(unbound, 'billing-bot');
      assert.equal(free.status, 201, free.text);
      assert.equal(
        (await decideAs(t, workspace.id, free.body.id, 'approve', 'bob@acme.test')).outcome,
        'recorded',
      );
      await verifiedEvidence(t, unbound);
    });

    test('a key is bound to a member of the workspace and an agent, or refused saying which', async () => {
      const { workspace } = await t.workspace({ config: config() });
      const refused = async (input: { agent?: string; owner?: string }, field: string) => {
        await assert.rejects(
          createApiKey(t.service.ctx, { workspace, env: 'live', ...input }),
          (error: any) => {
            assert.equal(error.code, 'validation_failed');
            assert.deepEqual(
              error.issues.map((issue: { field: string }) => issue.field),
              [field],
            );
            assert.doesNotMatch(error.message, /nobody@acme\.test/);
            return true;
          },
        );
      };
      await refused({ agent: 'billing-bot', owner: 'nobody@acme.test' }, 'owner');
      await refused({ owner: 'bob@acme.test' }, 'agent');
      await refused({ agent: 'x'.repeat(201) }, 'agent');
      await refused({ agent: ' ' }, 'agent');
      // An agent without an owner: its id is fixed, and nobody's own.
      const fixed = await createApiKey(t.service.ctx, { workspace, env: 'live', agent: 'shared-bot' });
      assert.equal(fixed.owner, null);
    });

    test('a workspace that requires bound keys refuses holds from unbound ones, on the API and the MCP proxy', async () => {
      const { workspace, key: unbound } = await t.workspace({
        config: config('keys: { require_bound: true }\n'),
      });
      assert.deepEqual((await exportConfig(t.service.ctx, workspace)).keys, { require_bound: true });
      const refused = await pay(unbound, 'billing-bot');
      assert.equal(refused.status, 403, refused.text);
      assert.deepEqual(refused.body, { error: 'key_not_bound' });
      // Reading stays open to it (and configuration, for an admin key): only submissions need a bound key.
      assert.equal((await call(t.url, 'GET', '/api/v1/audit/verify', { key: unbound })).status, 200);

      const bound = await createApiKey(t.service.ctx, {
        workspace,
        env: 'live',
        agent: 'billing-bot',
        owner: 'bob@acme.test',
      });
      assert.equal((await pay(bound.key, 'billing-bot')).status, 201);

      // The MCP proxy with API keys: the unbound key's call is refused, no hold made.
      const before = await holdsOf(workspace);
      const byUnbound = await connect(`${t.url}/mcp/rec`, unbound);
      const failure = await rpcFailure(byUnbound.callTool({ name: 'record', arguments: { text: 'a' } }));
      assert.equal(failure.code, -32000);
      assert.match(failure.message, /bound/);
      assert.equal(await holdsOf(workspace), before);

      // The bound key's call carries its agent without a header; its owner Bob is no admin, so Admin
      // decides. A header naming another agent is refused.
      const byBound = await connect(`${t.url}/mcp/rec`, bound.key);
      const held = envelopeOf(await byBound.callTool({ name: 'record', arguments: { text: 'b' } }));
      const hold = await call(t.url, 'GET', `/api/v1/holds/${held.reference}`, { key: bound.key });
      assert.equal(hold.body.agent_identity.id, 'billing-bot');
      const impostor = await connect(`${t.url}/mcp/rec`, bound.key, { 'X-Service-Agent': 'alice-assistant' });
      const wrong = await rpcFailure(impostor.callTool({ name: 'record', arguments: { text: 'c' } }));
      assert.equal(wrong.code, -32602);
      assert.doesNotMatch(wrong.message, /alice-assistant/);
      const same = await connect(`${t.url}/mcp/rec`, bound.key, { 'X-Service-Agent': 'billing-bot' });
      assert.equal(
        envelopeOf(await same.callTool({ name: 'record', arguments: { text: 'd' } })).status,
        'held',
      );

      // Turned off again, the unbound key submits once more.
      await applyConfig(t.service.ctx, workspace, parseConfig('keys: { require_bound: false }\n'));
      assert.equal((await exportConfig(t.service.ctx, workspace)).keys, undefined);
      assert.equal((await pay(unbound, 'billing-bot')).status, 201);
    });

    test("the MCP proxy: a bound key's holds are its owner's own", async () => {
      const { workspace } = await t.workspace({ config: config() });
      const bound = await createApiKey(t.service.ctx, {
        workspace,
        env: 'live',
        agent: 'alice-bot',
        owner: 'alice@acme.test',
      });
      const client = await connect(`${t.url}/mcp/rec`, bound.key);
      const held = envelopeOf(await client.callTool({ name: 'record', arguments: { text: 'x' } }));
      assert.equal(
        (await decideAs(t, workspace.id, held.reference, 'approve', 'alice@acme.test')).outcome,
        'own_request',
      );
      assert.equal((await decideAs(t, workspace.id, held.reference, 'approve')).outcome, 'recorded');
    });

    test('the Keys page binds a key to an agent and an owner, and lists them', async () => {
      const { workspace } = await t.workspace({ config: config() });
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const wrong = await app.post(admin, '/app/admin/keys', {
        env: 'live',
        scope: 'agent',
        agent: 'billing-bot',
        owner: 'nobody@acme.test',
      });
      assert.equal(wrong.status, 422);
      assert.match(wrong.text, /not a member of this workspace/);
      const made = await app.post(admin, '/app/admin/keys', {
        env: 'live',
        scope: 'agent',
        name: 'billing',
        agent: 'billing-bot',
        owner: 'bob@acme.test',
      });
      assert.equal(made.status, 200, made.text);
      const key = made.text.match(/svc_live_[A-Za-z0-9_-]{43}/)?.[0];
      assert.ok(key, 'the key is shown once');
      const row = made.text.slice(made.text.indexOf('<tbody>'), made.text.indexOf('</tbody>'));
      assert.match(row, /billing-bot/);
      assert.match(row, /Bob \(bob@acme\.test\)/);
      const own = await pay(key, 'billing-bot');
      assert.equal(
        (await decideAs(t, workspace.id, own.body.id, 'approve', 'bob@acme.test')).outcome,
        'own_request',
      );
    });

    test('approvals keys create --agent --owner binds the key', async () => {
      const { workspace } = await t.workspace({ config: config() });
      const run = await approvals(t.storage, [
        'keys',
        'create',
        '--workspace',
        workspace.slug,
        '--env',
        'live',
        '--agent',
        'billing-bot',
        '--owner',
        'bob@acme.test',
        '--json',
      ]);
      assert.equal(run.code, 0, run.stderr);
      const made = JSON.parse(run.stdout);
      assert.equal(made.agent, 'billing-bot');
      assert.equal(made.owner, 'bob@acme.test');
      const own = await pay(made.key, 'billing-bot');
      assert.equal(
        (await decideAs(t, workspace.id, own.body.id, 'approve', 'bob@acme.test')).outcome,
        'own_request',
      );

      const ownerOnly = await approvals(t.storage, [
        'keys',
        'create',
        '--workspace',
        workspace.slug,
        '--env',
        'live',
        '--owner',
        'bob@acme.test',
      ]);
      assert.notEqual(ownerOnly.code, 0);
      assert.match(ownerOnly.stderr, /agent/);
    });
  });
}
