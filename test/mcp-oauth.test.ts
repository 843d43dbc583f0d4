/**
 * Issue 25: OAuth for MCP clients. Each MCP server of a workspace is a protected resource at
 * /mcp/<workspace>/<server> (RFC 9728) with the service as its authorization server (RFC 8414, PKCE S256,
 * RFC 8707 resource indicators, Dynamic Client Registration); a member allows a client on the consent
 * page, and the token acts as an agent of the workspace for that one MCP server. Every refusal the issue
 * names is tried here, at the HTTP level; test/mcp-oauth.e2e.test.ts drives real clients through it.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { listEntries } from '../src/store/evidence.ts';
import { appClient } from './support/app-client.ts';
import { backends, postgres, type Storage } from './support/backends.ts';
import { freePort, type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { type Authorization, mcpAnswerWith, oauthClient, REDIRECT_URI } from './support/oauth-client.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';
import type { Workspace } from '../src/store/workspaces.ts';

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

const config = (upstream: string, extra = '') =>
  `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ana@acme.test, name: Ana, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstream}" }
  - { slug: other, name: Other, url: "${upstream}" }
tools:
  - { connection: Recorder, tool: record, classification: allow }
  - { connection: Recorder, tool: send, classification: approval }
  - { connection: Recorder, tool: drop, classification: deny }
${extra}`;

interface Envelope {
  status: string;
  reference: string;
  deduplicated?: boolean;
}
const envelopeOf = (result: unknown) => {
  const { content } = result as { content: { text?: string }[] };
  return (JSON.parse(content[1]!.text!) as { service: Envelope }).service;
};

for (const backend of backends) {
  describe(`OAuth for MCP clients on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    const app = appClient(() => t);
    const clients: Client[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      upstream.offer('send', 'drop');
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

    // Each test starts a minute later: registering and authorizing count against an address's
    // anonymous quota (20 a minute), and every request here comes from 127.0.0.1.
    beforeEach(() => t.clock.advance(61_000, { runWorkers: false }));

    const resourceOf = (workspace: Workspace, server = 'rec') => `${t.url}/mcp/${workspace.slug}/${server}`;

    async function setUp(extra = '') {
      const { workspace, key } = await t.workspace({ config: config(upstream.url, extra) });
      return { workspace, key, admin: await app.signIn(workspace, 'admin@acme.test') };
    }

    async function connectWith(url: string, token: string) {
      const client = new Client({ name: 'oauth-test', version: '1' });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${token}` } },
        }),
      );
      clients.push(client);
      return client;
    }

    const evidenceTypes = (workspace: Workspace) =>
      listEntries(t.service.ctx.db, workspace.id, workspace.id, 1, 100_000, 100_000);

    test('an OAuth client finds the authorization server from the 401, as RFC 9728 and 8414 say', async () => {
      const { workspace } = await setUp();
      const resource = resourceOf(workspace);
      const refused = await fetch(resource, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify(initialize),
      });
      assert.equal(refused.status, 401);
      const metadataUrl = `${t.url}/.well-known/oauth-protected-resource/mcp/${workspace.slug}/rec`;
      assert.equal(
        refused.headers.get('www-authenticate'),
        `Bearer resource_metadata="${metadataUrl}", scope="mcp"`,
      );
      // The contract's endpoint keeps its bare challenge (decisions.md, MCP proxy).
      const contract = await fetch(`${t.url}/mcp/rec`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      assert.equal(contract.status, 401);
      assert.equal(contract.headers.get('www-authenticate'), 'Bearer');

      const metadata = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>;
      assert.equal(metadata.resource, resource);
      assert.deepEqual(metadata.authorization_servers, [t.url]);
      assert.deepEqual(metadata.scopes_supported, ['mcp']);
      assert.equal(
        (await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp/${workspace.slug}/nope`)).status,
        404,
      );

      const server = (await (
        await fetch(`${t.url}/.well-known/oauth-authorization-server`)
      ).json()) as Record<string, unknown>;
      assert.equal(server.issuer, t.url);
      assert.deepEqual(server.code_challenge_methods_supported, ['S256']);
      assert.equal(server.authorization_endpoint, `${t.url}/oauth/authorize`);
      assert.equal(server.token_endpoint, `${t.url}/oauth/token`);
      assert.equal(server.registration_endpoint, `${t.url}/oauth/register`);
      assert.equal(server.client_id_metadata_document_supported, true);
      assert.deepEqual(server.response_types_supported, ['code']);
    });

    test('a member allows a client; its token calls an allowed, a held and a denied tool as an agent', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const clientId = await oauth.register();
      const auth = await oauth.authorize(clientId, resource);
      assert.equal(auth.status, 303, auth.text);
      assert.match(auth.location, /^\/app\/oauth\//);
      const page = await oauth.consentPage(auth, admin);
      assert.equal(page.status, 200);
      assert.match(page.text, /Test assistant/);
      assert.match(page.text, /Recorder/);
      assert.ok(page.text.includes(resource));

      const { query } = await oauth.decide(auth, admin, 'allow');
      assert.equal(query!.get('state'), auth.state);
      assert.equal(query!.get('iss'), t.url);
      const exchanged = await oauth.exchange(auth, query!, clientId, resource);
      assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
      assert.equal(exchanged.body.token_type, 'Bearer');
      assert.ok(exchanged.body.expires_in <= 15 * 60);
      assert.ok(exchanged.body.refresh_token);

      // Tokens are stored as hashes: neither is anywhere in the OAuth server's rows.
      for (const secret of [exchanged.body.access_token, exchanged.body.refresh_token!]) {
        const found = await t.service.ctx.db.one<{ n: unknown }>(
          "SELECT COUNT(*) AS n FROM oauth_records WHERE id = $1 OR payload LIKE '%' || $1 || '%'",
          [secret],
        );
        assert.equal(Number(found?.n), 0);
      }

      const client = await connectWith(resource, exchanged.body.access_token);
      const allowed = await client.callTool({ name: 'record', arguments: { text: 'by oauth' } });
      assert.deepEqual(allowed.content, [{ type: 'text', text: 'recorded: by oauth' }]);
      const held = envelopeOf(await client.callTool({ name: 'send', arguments: { to: 'x' } }));
      assert.equal(held.status, 'held');
      await assert.rejects(client.callTool({ name: 'drop', arguments: {} }), /Denied by policy/);
      // The grant is the caller: a new session with its token repeats the same hold.
      const again = await connectWith(resource, exchanged.body.access_token);
      const repeat = envelopeOf(await again.callTool({ name: 'send', arguments: { to: 'x' } }));
      assert.deepEqual([repeat.reference, repeat.deduplicated], [held.reference, true]);

      // The agent identity names the client and the member who allowed it.
      const hold = await t.service.ctx.db.one<{ agent_id: string }>(
        'SELECT agent_id FROM holds WHERE workspace_id = $1 AND id = $2',
        [workspace.id, held.reference],
      );
      assert.equal(hold?.agent_id, `oauth:admin@acme.test:${clientId}`);
      const granted = (await evidenceTypes(workspace)).find((entry) => entry.type === 'oauth.granted');
      assert.ok(granted, 'the grant is in the evidence');
      assert.deepEqual(JSON.parse(granted.data), {
        grant: JSON.parse(granted.data).grant,
        client_id: clientId,
        client_name: 'Test assistant',
        member: 'admin@acme.test',
        mcp_server: 'rec',
      });

      // Listed on the keys page, with its client, member, MCP server and last use.
      const keys = await app.get(admin, '/app/admin/keys');
      const row = keys.text.slice(keys.text.indexOf('Connected clients'));
      assert.match(row, /Test assistant/);
      assert.match(row, /Admin \(admin@acme\.test\)/);
      assert.match(row, /Recorder \(<code>rec<\/code>\)/);
      assert.match(row, /data-label="Last used">\s*<time/, 'the calls above are its last use');
    });

    test("rules on agent apply to a token's identity: oauth:* is held where the workspace's key is not", async () => {
      const { workspace, key, admin } = await setUp(
        "rules:\n  - { name: Connected clients wait, tool: record, agent: 'oauth:*', effect: approval, approvers: [admin@acme.test] }\n",
      );
      const resource = resourceOf(workspace);
      const { tokens } = await oauthClient(t.url).connect(admin, resource);
      const byToken = await connectWith(resource, tokens.access_token);
      assert.equal(
        envelopeOf(await byToken.callTool({ name: 'record', arguments: { text: 'a' } })).status,
        'held',
      );
      // The workspace's API key works at the same URL, as another agent.
      const byKey = await connectWith(resource, key);
      const allowed = await byKey.callTool({ name: 'record', arguments: { text: 'b' } });
      assert.deepEqual(allowed.content, [{ type: 'text', text: 'recorded: b' }]);
    });

    test('a token is refused at another MCP server and at another workspace', async () => {
      const { workspace, admin } = await setUp();
      const { workspace: second } = await setUp();
      const { tokens } = await oauthClient(t.url).connect(admin, resourceOf(workspace));
      assert.equal((await mcpAnswerWith(resourceOf(workspace), tokens.access_token)).status, 200);
      for (const url of [resourceOf(workspace, 'other'), resourceOf(second), `${t.url}/mcp/rec`]) {
        const refused = await mcpAnswerWith(url, tokens.access_token);
        assert.equal(refused.status, 401, url);
        if (url !== `${t.url}/mcp/rec`) assert.match(refused.challenge ?? '', /error="invalid_token"/);
      }
      // And a resource of another workspace cannot be asked for with a grant of this one.
      const oauth = oauthClient(t.url);
      const clientId = await oauth.register();
      const auth = await oauth.authorize(clientId, resourceOf(second));
      const page = await oauth.consentPage(auth, admin);
      assert.equal(page.status, 403);
      assert.doesNotMatch(page.text, /value="allow"/);
    });

    test('an expired token is refused; a refresh gives a new one', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const { clientId, tokens } = await oauth.connect(admin, resource);
      await t.clock.advance(16 * 60_000);
      try {
        const expired = await mcpAnswerWith(resource, tokens.access_token);
        assert.equal(expired.status, 401);
        assert.match(expired.challenge ?? '', /error="invalid_token"/);
        // The workers ran at the new time: the deadline worker swept the expired token away.
        const left = await t.service.ctx.db.one<{ n: unknown }>(
          "SELECT COUNT(*) AS n FROM oauth_records WHERE model = 'AccessToken' AND expires_at <= $1",
          [t.clock.now()],
        );
        assert.equal(Number(left?.n), 0);
      } finally {
        await t.clock.advance(-16 * 60_000, { runWorkers: false });
      }
      const refreshed = await oauth.token({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: clientId,
        resource,
      });
      assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
      assert.notEqual(refreshed.body.refresh_token, tokens.refresh_token, 'refresh tokens rotate');
      assert.equal((await mcpAnswerWith(resource, refreshed.body.access_token)).status, 200);
    });

    test('a refresh token used twice ends the grant: every token of it is refused, and the evidence says so', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const { clientId, tokens } = await oauth.connect(admin, resource);
      const form = {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: clientId,
        resource,
      };
      const first = await oauth.token(form);
      assert.equal(first.status, 200);
      const reused = await oauth.token(form);
      assert.equal(reused.status, 400);
      assert.equal(reused.body.error, 'invalid_grant');
      assert.equal((await mcpAnswerWith(resource, first.body.access_token)).status, 401);
      const again = await oauth.token({ ...form, refresh_token: first.body.refresh_token! });
      assert.equal(again.status, 400);
      const revoked = await waitForEntry(workspace, 'oauth.revoked');
      assert.equal(JSON.parse(revoked.data).by, 'client');
    });

    test('a client that revokes its access token ends its grant: recorded, and gone from the keys page', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const { clientId, tokens } = await oauth.connect(admin, resource);
      const revoked = await fetch(`${t.url}/oauth/revoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: tokens.access_token, client_id: clientId }),
      });
      await revoked.arrayBuffer();
      assert.equal(revoked.status, 200);
      assert.equal((await mcpAnswerWith(resource, tokens.access_token)).status, 401);
      const refreshed = await oauth.token({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: clientId,
        resource,
      });
      assert.equal(refreshed.status, 400);
      const entry = await waitForEntry(workspace, 'oauth.revoked');
      assert.equal(JSON.parse(entry.data).by, 'client');
      assert.doesNotMatch((await app.get(admin, '/app/admin/keys')).text, /Test assistant/);
    });

    test('an admin revokes a grant on the keys page: the next request with its token is refused', async () => {
      const { workspace, admin } = await setUp();
      const resource = resourceOf(workspace);
      const { tokens } = await oauthClient(t.url).connect(admin, resource);
      const client = await connectWith(resource, tokens.access_token);
      await client.callTool({ name: 'record', arguments: { text: 'before' } });
      const keys = await app.get(admin, '/app/admin/keys');
      const revoke = keys.text.match(/action="(\/app\/admin\/keys\/grants\/[^"]+\/revoke)"/)?.[1];
      assert.ok(revoke, 'the grant has a revoke button');
      const confirm = await app.post(admin, revoke, {});
      assert.equal(confirm.status, 200);
      const done = await app.post(admin, revoke, { confirm: 'yes' });
      assert.equal(done.status, 303);
      await assert.rejects(client.callTool({ name: 'record', arguments: { text: 'after' } }));
      assert.equal((await mcpAnswerWith(resource, tokens.access_token)).status, 401);
      const entry = (await evidenceTypes(workspace)).find((e) => e.type === 'oauth.revoked');
      assert.equal(JSON.parse(entry!.data).by, 'admin@acme.test');
    });

    test('refused: an unregistered redirect_uri, no PKCE or plain PKCE, no resource, an unknown resource', async () => {
      const { workspace } = await setUp();
      const oauth = oauthClient(t.url);
      const clientId = await oauth.register();
      const resource = resourceOf(workspace);
      // A redirect URI not registered is never redirected to: the error is shown here.
      const wrongRedirect = await oauth.authorize(clientId, resource, {
        redirectUri: 'http://127.0.0.1:9/elsewhere',
      });
      assert.equal(wrongRedirect.status, 400);
      assert.equal(wrongRedirect.location, '');
      assert.match(wrongRedirect.text, /redirect_uri/);
      // Refused on the page, never by a redirect: anyone can register a client with any redirect URI,
      // so the first leg of an authorization never sends the browser there by itself.
      const refusedOnPage = (refused: Authorization, error: string, label: string) => {
        assert.equal(refused.status, 400, label);
        assert.equal(refused.location, '', label);
        assert.match(refused.text, new RegExp(error), label);
      };
      for (const pkce of ['none', 'plain'] as const)
        refusedOnPage(await oauth.authorize(clientId, resource, { pkce }), 'invalid_request', pkce);
      for (const target of [null, `${t.url}/mcp/${workspace.slug}/nope`, 'https://elsewhere.example/mcp'])
        refusedOnPage(await oauth.authorize(clientId, target), 'invalid_target', String(target));
      refusedOnPage(
        await oauth.authorize(clientId, resource, { prompt: 'none' }),
        'login_required',
        'prompt=none',
      );
      // Each endpoint answers at its one spelling: no other case, no trailing slash, past the checks.
      const query = new URL(
        `http://x/?${new URLSearchParams({ client_id: clientId, redirect_uri: REDIRECT_URI, response_type: 'code', prompt: 'none', resource })}`,
      ).search;
      for (const path of ['/oauth/authorize/', '/oauth/Authorize', '/oauth/AUTHORIZE/']) {
        const variant = await fetch(`${t.url}${path}${query}`, { redirect: 'manual' });
        await variant.arrayBuffer();
        assert.equal(variant.status, 404, path);
      }
      for (const path of ['/oauth/register/', '/oauth/Register']) {
        const variant = await fetch(`${t.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: [REDIRECT_URI] }),
        });
        await variant.arrayBuffer();
        assert.equal(variant.status, 404, path);
      }
      // A registration states its length, and a short one.
      const chunked = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: new Blob([JSON.stringify({ redirect_uris: [REDIRECT_URI] })]).stream(),
        duplex: 'half',
      } as RequestInit);
      await chunked.arrayBuffer();
      assert.equal(chunked.status, 411);
      const large = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ redirect_uris: [REDIRECT_URI], client_name: 'x'.repeat(20_000) }),
      });
      await large.arrayBuffer();
      assert.equal(large.status, 413);
      const formPost = await oauth.authorize(clientId, resource, { responseMode: 'form_post' });
      assert.equal(formPost.status, 303, 'an answer mode is dropped: the request goes on to consent');
      assert.match(formPost.location, /^\/app\/oauth\//);
    });

    test('the consent page sends a signed-out member to sign in and back; a decision counts once', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const auth = await oauth.authorize(await oauth.register(), resource);
      const signedOut = await fetch(new URL(auth.location, t.url), {
        headers: { cookie: auth.jar.header() },
        redirect: 'manual',
      });
      assert.equal(signedOut.status, 303);
      assert.equal(signedOut.headers.get('location'), `/app/login?next=${encodeURIComponent(auth.location)}`);
      // Allow sent twice before the browser moves on (a double click): the second is refused.
      const post = (verdict = 'allow', request = auth) =>
        fetch(new URL(request.location, t.url), {
          method: 'POST',
          headers: {
            cookie: request.jar.header(`approvals_session=${admin.cookie}`),
            'content-type': 'application/x-www-form-urlencoded',
            origin: t.url,
          },
          body: new URLSearchParams({ _csrf: admin.csrf, verdict }),
          redirect: 'manual',
        });
      const first = await post();
      assert.equal(first.status, 303);
      assert.equal((await post()).status, 409);
      assert.equal((await post('refuse')).status, 409, 'a refusal after Allow changes nothing');
      // Three at once: one decision.
      const again = await oauth.authorize(await oauth.register(), resource);
      const posts = await Promise.all([1, 2, 3].map(() => post('allow', again)));
      assert.deepEqual(posts.map((answer) => answer.status).sort(), [303, 409, 409]);
      const grants = await t.service.ctx.db.one<{ n: unknown }>(
        'SELECT COUNT(*) AS n FROM oauth_grants WHERE workspace_id = $1',
        [workspace.id],
      );
      assert.equal(Number(grants?.n), 2, 'one grant for each request decided');
    });

    test("the consent page's form may lead only to the client: its origin, an app's scheme, an IPv6 loopback's scheme", async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      for (const [redirect, source] of [
        ['http://127.0.0.1:9/callback', 'http://127.0.0.1:9'],
        ['cursor://anysphere.cursor-mcp/oauth/callback', 'cursor:'],
        ['http://[::1]:9/callback', 'http:'],
      ] as const) {
        const clientId = await oauth.register({ redirect_uris: [redirect], application_type: 'native' });
        const auth = await oauth.authorize(clientId, resourceOf(workspace), { redirectUri: redirect });
        assert.equal(auth.status, 303, `${redirect}: ${auth.text}`);
        const page = await fetch(new URL(auth.location, t.url), {
          headers: { cookie: auth.jar.header(`approvals_session=${admin.cookie}`) },
        });
        await page.arrayBuffer();
        assert.match(
          page.headers.get('content-security-policy') ?? '',
          new RegExp(`form-action 'self' ${source.replace(/[.[\]]/g, '\\$&')};`),
          redirect,
        );
      }
    });

    test('a client asking for other scopes gets the MCP server and only the scopes it may have', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      for (const scope of ['openid', 'openid profile email', 'offline_access', 'claudeai']) {
        const clientId = await oauth.register();
        const auth = await oauth.authorize(clientId, resource, { scope });
        const { query } = await oauth.decide(auth, admin, 'allow');
        const exchanged = await oauth.exchange(auth, query!, clientId, resource);
        assert.equal(exchanged.status, 200, `${scope}: ${JSON.stringify(exchanged.body)}`);
        assert.equal((await mcpAnswerWith(resource, exchanged.body.access_token)).status, 200, scope);
      }
    });

    test('refresh tokens used at once: one wins, and the grant ends (PostgreSQL runs them in parallel)', async () => {
      const { workspace, admin } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const { clientId, tokens } = await oauth.connect(admin, resource);
      const form = {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token!,
        client_id: clientId,
        resource,
      };
      const answers = await Promise.all([1, 2, 3, 4].map(() => oauth.token(form)));
      const won = answers.filter((answer) => answer.status === 200);
      assert.ok(won.length <= 1, `${won.length} refreshes succeeded with one refresh token`);
      for (const answer of won)
        assert.equal((await mcpAnswerWith(resource, answer.body.access_token)).status, 401);
      await waitForEntry(workspace, 'oauth.revoked');
    });

    test('a grant ends when its member is removed, its MCP server is removed or its member may no longer grant', async () => {
      const base = config(upstream.url);
      for (const [label, change] of [
        [
          'member removed',
          base.replace(
            '  - { email: admin@acme.test, name: Admin, role: admin }\n',
            '  - { email: root@acme.test, name: Root, role: admin }\n',
          ),
        ],
        ['server removed', base.replace(/ {2}- \{ slug: rec[^\n]*\n/, '')],
        ['role lowered', base.replace('name: Ana, role: approver', 'name: Ana, role: viewer')],
      ] as const) {
        const extra = 'oauth: { grant_role: approver }\n';
        const { workspace } = await setUp(extra);
        const member = await app.signIn(
          workspace,
          label === 'role lowered' ? 'ana@acme.test' : 'admin@acme.test',
        );
        const resource = resourceOf(workspace);
        const { clientId, tokens } = await oauthClient(t.url).connect(member, resource);
        await applyConfig(t.service.ctx, workspace, parseConfig(`${change}${extra}`));
        assert.equal((await mcpAnswerWith(resource, tokens.access_token)).status, 401, label);
        const refreshed = await oauthClient(t.url).token({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token!,
          client_id: clientId,
          resource,
        });
        assert.equal(refreshed.status, 400, label);
        const entry = (await evidenceTypes(workspace)).find((e) => e.type === 'oauth.revoked');
        assert.equal(JSON.parse(entry!.data).by, 'config', label);
        // Declared again, the member or server comes back without the grant.
        await applyConfig(t.service.ctx, workspace, parseConfig(`${base}${extra}`));
        assert.equal(
          (await mcpAnswerWith(resource, tokens.access_token)).status,
          401,
          `${label}, declared again`,
        );
      }
    });

    test('only the roles the workspace allows may grant; a refusal goes back to the client', async () => {
      const { workspace } = await setUp();
      const oauth = oauthClient(t.url);
      const resource = resourceOf(workspace);
      const clientId = await oauth.register();
      const viewer = await app.signIn(workspace, 'vic@acme.test');
      const approver = await app.signIn(workspace, 'ana@acme.test');
      for (const member of [viewer, approver]) {
        const auth = await oauth.authorize(clientId, resource);
        const page = await oauth.consentPage(auth, member);
        assert.equal(page.status, 403);
        assert.doesNotMatch(page.text, /value="allow"/);
        const forced = await oauth.decide(auth, member, 'allow');
        assert.equal(forced.status, 403);
        assert.equal(forced.query, null);
      }
      // The refusal is the client's answer.
      const auth = await oauth.authorize(clientId, resource);
      const refused = await oauth.decide(auth, viewer, 'refuse');
      assert.equal(refused.query!.get('error'), 'access_denied');
      assert.equal(refused.query!.get('code'), null);

      // A workspace that lets approvers grant.
      const { workspace: open } = await setUp('oauth: { grant_role: approver }\n');
      const openApprover = await app.signIn(open, 'ana@acme.test');
      const { tokens } = await oauth.connect(openApprover, resourceOf(open));
      assert.equal((await mcpAnswerWith(resourceOf(open), tokens.access_token)).status, 200);
    });

    /** The OAuth server's revocation is recorded behind its answer (an event of the library). */
    const waitForEntry = (workspace: Workspace, type: string) =>
      until(`a ${type} entry`, async () => (await evidenceTypes(workspace)).find((e) => e.type === type));
  });
}

describe('OAuth across two instances on one PostgreSQL', { skip: postgres.skip }, () => {
  let storage: Storage;
  let upstream: RecordingUpstream;
  const instances: TestService[] = [];

  before(async () => {
    upstream = await startRecordingUpstream();
    storage = await postgres.create();
    // One deployment: one public address (the first instance's), one secrets key (DATA_DIR's file).
    const port = await freePort();
    const env = { ALLOW_PRIVATE_TARGETS: 'true', PUBLIC_URL: `http://127.0.0.1:${port}` };
    instances.push(await startTestService(postgres, { storage, env: { ...env, PORT: String(port) } }));
    instances.push(await startTestService(postgres, { storage, env }));
  });
  after(async () => {
    for (const instance of instances) await instance.stop();
    await storage?.drop();
    await upstream?.close();
  });

  test('an authorization started on one instance is decided, resumed and used on the other', async () => {
    const [a, b] = instances as [TestService, TestService];
    const { workspace } = await a.workspace({ config: config(upstream.url) });
    const admin = await appClient(b).signIn(workspace, 'admin@acme.test');
    const resource = `${a.url}/mcp/${workspace.slug}/rec`;
    const onA = oauthClient(a.url);
    const onB = oauthClient(b.url);
    const clientId = await onA.register();
    const auth = await onA.authorize(clientId, resource);
    // The consent page, the decision and the resumption are served by the other instance.
    const { query } = await onB.decide(auth, admin, 'allow');
    assert.equal(query?.get('iss'), a.url);
    const exchanged = await onA.exchange(auth, query!, clientId, resource);
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    for (const instance of instances) {
      const answer = await mcpAnswerWith(
        `${instance.url}/mcp/${workspace.slug}/rec`,
        exchanged.body.access_token,
      );
      assert.equal(answer.status, 200, instance.url);
    }
  });
});

for (const backend of backends) {
  describe(`OAuth clients nobody uses on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(() => t?.close());

    test('a client never allowed is refused a day after it registered; one in use stays', async () => {
      const { workspace } = await t.workspace({ config: config('http://127.0.0.1:9/mcp') });
      const admin = await appClient(t).signIn(workspace, 'admin@acme.test');
      const oauth = oauthClient(t.url);
      const resource = `${t.url}/mcp/${workspace.slug}/rec`;
      const unused = await oauth.register();
      const { clientId: used } = await oauth.connect(admin, resource);
      // An hour short of a day: both stay (test/oauth-registrations.test.ts has the rest).
      await t.clock.advance(23 * 3_600_000);
      assert.equal((await oauth.authorize(unused, resource)).status, 303);
      await t.clock.advance(2 * 3_600_000);
      const gone = await oauth.authorize(unused, resource);
      assert.equal(gone.status, 400);
      assert.match(gone.text, /invalid_client/);
      assert.equal((await oauth.authorize(used, resource)).status, 303);
    });
  });
}
