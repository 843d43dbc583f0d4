/**
 * The MCP endpoint's own answers (decisions.md, amendments: every error of the MCP endpoint has a
 * JSON-RPC body), its rate limit (MCP_RATE_LIMIT tool calls a minute per API key; other messages are
 * not counted), and what makes calls identical (amendment 2026-11-29, "MCP deduplication"): the caller,
 * server, tool and arguments, within X-Service-Session when sent; never the MCP session or JSON-RPC id.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createApiKey } from '../src/services/api-keys.ts';
import { getHold } from '../src/services/read-hold.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { until } from './support/wait.ts';
import { call, rpcMessages } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const ADMIN = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
/** The quota the service runs with here: small, so going over it is quick. */
const QUOTA = 10;
/** A value that must never come back in an answer. */
const MARKER = 'MARKER-7f3a9c';

const initialize = (protocolVersion = '2025-06-18', id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

interface Envelope {
  status: string;
  reference: string;
  deduplicated?: boolean;
}

function envelopeOf(result: unknown): Envelope {
  const { content } = result as { content: { text?: string }[] };
  return (JSON.parse(content[1]!.text!) as { service: Envelope }).service;
}

/** A JSON-RPC error answer as the MCP transport sends it: no result, no echoed id. */
function assertRpcError(answer: { status: number; headers: Headers; body: any; text: string }, code: number) {
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, answer.text);
  assert.equal(answer.body.jsonrpc, '2.0', answer.text);
  assert.equal(answer.body.id, null, answer.text);
  assert.equal(answer.body.error.code, code, answer.text);
  assert.equal(typeof answer.body.error.message, 'string');
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'id', 'jsonrpc']);
  assert.ok(!answer.text.includes(MARKER), `echoed: ${answer.text}`);
}

for (const backend of backends) {
  describe(`MCP endpoint on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    const clients: Client[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', MCP_RATE_LIMIT: String(QUOTA) },
      });
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await upstream?.close();
      }
    });

    /** A workspace whose MCP server `rec` is the recording upstream; `record` waits for an admin. */
    const workspaceWith = () =>
      t.workspace({
        config:
          `${ADMIN}mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n` +
          'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n',
      });

    async function connect(
      key: string,
      options: { session?: string; negotiation?: 'legacy' | 'auto'; slug?: string } = {},
    ) {
      const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
      if (options.session) headers['X-Service-Session'] = options.session;
      const client = new Client(
        { name: 'endpoint-test', version: '1' },
        { versionNegotiation: { mode: options.negotiation ?? 'legacy' } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${options.slug ?? 'rec'}`), {
          requestInit: { headers },
        }),
      );
      clients.push(client);
      return client;
    }

    const record = (client: Client, text: string) =>
      client.callTool({ name: 'record', arguments: { text } }).then(envelopeOf);

    const post = (
      path: string,
      options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
    ) =>
      call(t.url, 'POST', path, {
        ...options,
        headers: {
          accept: 'application/json, text/event-stream',
          ...(options.raw !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
      });

    /** A raw 2025-era session: its id, and `send` for one JSON-RPC message (or batch) in it. */
    async function rawSession(key: string, slug = 'rec') {
      const init = await post(`/mcp/${slug}`, { key, body: initialize() });
      assert.equal(init.status, 200, init.text);
      const session = init.headers.get('mcp-session-id')!;
      assert.ok(session);
      const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
      const initialized = await post(`/mcp/${slug}`, {
        key,
        headers,
        body: { jsonrpc: '2.0', method: 'notifications/initialized' },
      });
      assert.equal(initialized.status, 202);
      let id = 1;
      return {
        session,
        send: (body: unknown) => post(`/mcp/${slug}`, { key, headers, body }),
        /** A tools/call of service_check_status: a tool call that makes no hold. */
        check: () => {
          id += 1;
          return post(`/mcp/${slug}`, {
            key,
            headers,
            body: {
              jsonrpc: '2.0',
              id,
              method: 'tools/call',
              params: { name: 'service_check_status', arguments: { reference: 'svc_pa_unknown' } },
            },
          });
        },
      };
    }

    const holdIds = async (workspace: Workspace) =>
      (
        await t.service.ctx.db.all<{ id: string }>(
          "SELECT id FROM holds WHERE workspace_id = $1 AND tool_name = 'record' ORDER BY created_at, id",
          [workspace.id],
        )
      ).map((row) => row.id);

    describe('errors have JSON-RPC bodies', () => {
      test('bad JSON: 400 with -32700 and id null, never the input', async () => {
        const { key } = await workspaceWith();
        for (const raw of [`{"jsonrpc":"2.0","id":1,"method":"${MARKER}"`, `${MARKER}`, '{', '[1,']) {
          const answer = await post('/mcp/rec', { key, raw });
          assert.equal(answer.status, 400, answer.text);
          assertRpcError(answer, -32700);
          assert.match(answer.body.error.message, /^Parse error/);
        }
        // Without a key too: the body is read before the key is checked.
        assertRpcError(await post('/mcp/rec', { raw: '{' }), -32700);
      });

      test('JSON that is not a JSON-RPC message: 400 with -32600', async () => {
        const { key } = await workspaceWith();
        const { send } = await rawSession(key);
        const bodies: unknown[] = [
          { hello: MARKER },
          { jsonrpc: '1.0', id: 1, method: 'tools/list' },
          { jsonrpc: '2.0', id: 1, method: 7 },
          { jsonrpc: '2.0', id: { [MARKER]: 1 }, method: 'tools/list' },
          [],
          [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, MARKER],
          42,
          MARKER,
          null,
        ];
        for (const body of bodies) {
          const answer = await send(body);
          assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
          assertRpcError(answer, -32600);
          assert.match(answer.body.error.message, /^Invalid Request/);
        }
      });

      test('a body that is not application/json: 415 with -32000 "Unsupported Media Type"', async () => {
        const { key } = await workspaceWith();
        for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'text/html']) {
          const answer = await post('/mcp/rec', {
            key,
            raw: JSON.stringify(initialize()),
            headers: { 'content-type': contentType },
          });
          assert.equal(answer.status, 415, answer.text);
          assertRpcError(answer, -32000);
          assert.match(answer.body.error.message, /^Unsupported Media Type/);
        }
      });

      test('a body over 1 MiB: 413 with a JSON-RPC body', async () => {
        const { key } = await workspaceWith();
        const answer = await post('/mcp/rec', {
          key,
          body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { text: MARKER.repeat(200_000) } },
        });
        assert.equal(answer.status, 413);
        assertRpcError(answer, -32000);
      });

      test('an unknown or foreign server: 404 with a JSON-RPC body that does not name it', async () => {
        const { key } = await workspaceWith();
        const other = await workspaceWith();
        for (const [answerKey, slug] of [
          [key, `no-such-${MARKER}`],
          [other.key, `gone-${MARKER}`],
        ] as const) {
          const answer = await post(`/mcp/${slug}`, { key: answerKey, body: initialize() });
          assert.equal(answer.status, 404, answer.text);
          assertRpcError(answer, -32000);
        }
      });

      test('no valid key: 401 with a JSON-RPC body and a bare Bearer challenge', async () => {
        for (const headers of [{}, { authorization: `Bearer svc_live_${MARKER}` }] as Record<
          string,
          string
        >[]) {
          const answer = await post('/mcp/rec', { body: initialize(), headers });
          assert.equal(answer.status, 401, answer.text);
          assert.equal(answer.headers.get('www-authenticate'), 'Bearer');
          assertRpcError(answer, -32000);
          assert.match(answer.body.error.message, /^Unauthorized/);
        }
      });

      test('a method the endpoint does not serve: 405 with Allow and a JSON-RPC body', async () => {
        const { key } = await workspaceWith();
        for (const method of ['PUT', 'PATCH']) {
          const answer = await call(t.url, method, '/mcp/rec', { key, body: initialize() });
          assert.equal(answer.status, 405, `${method}: ${answer.text}`);
          assert.equal(answer.headers.get('allow'), 'GET, POST, DELETE');
          assertRpcError(answer, -32000);
        }
      });

      test('a session stream without text/event-stream in Accept: 406 with a JSON-RPC body', async () => {
        const { key } = await workspaceWith();
        const { session } = await rawSession(key);
        // Bounded: a stream opened by mistake would never end.
        const response = await fetch(`${t.url}/mcp/rec`, {
          headers: { authorization: `Bearer ${key}`, accept: 'application/json', 'mcp-session-id': session },
          signal: AbortSignal.timeout(5000),
        });
        const text = await response.text();
        const answer = { status: response.status, headers: response.headers, body: JSON.parse(text), text };
        assert.equal(answer.status, 406, answer.text);
        assertRpcError(answer, -32000);
      });

      test("the Core API's error shapes are unchanged", async () => {
        const { key } = await workspaceWith();
        const badJson = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          raw: '{',
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(badJson.status, 400);
        assert.deepEqual(badJson.body, { error: 'invalid_json' });
        const plain = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          raw: '{}',
          headers: { 'content-type': 'text/plain' },
        });
        assert.equal(plain.status, 415);
        assert.deepEqual(plain.body, { error: 'unsupported_media_type' });
        const missing = await call(t.url, 'GET', '/api/v1/holds/svc_pa_AAAAAAAAAAAAAAAAAAAAAA', { key });
        assert.deepEqual(missing.body, { error: 'not_found' });
        const unknownRoute = await call(t.url, 'GET', '/nowhere');
        assert.deepEqual(unknownRoute.body, { error: 'not_found' });
        const unauthorized = await call(t.url, 'GET', '/api/v1/holds/svc_pa_AAAAAAAAAAAAAAAAAAAAAA');
        assert.deepEqual(unauthorized.body, { error: 'unauthorized' });
        const wrongMethod = await call(t.url, 'PUT', '/api/v1/holds', { key, body: {} });
        assert.deepEqual(wrongMethod.body, { error: 'method_not_allowed' });
      });
    });

    describe('the rate limit counts tool calls per API key', () => {
      test(`60 clients connect and list without a 429; the ${QUOTA + 1}th tool call in a minute is one`, async () => {
        const { workspace, key } = await workspaceWith();
        // Start at the beginning of a window so everything below falls into one.
        t.clock.advance(60_000 - (t.clock.now() % 60_000));
        const connected = await Promise.all(
          Array.from({ length: 60 }, async () => {
            const client = await connect(key);
            const { tools } = await client.listTools();
            return { client, tools };
          }),
        );
        for (const { tools } of connected) assert.ok(tools.some((tool) => tool.name === 'record'));
        const { client } = connected[0]!;

        // Tool calls count, through any session of the key, whatever the tool.
        const raw = await rawSession(key);
        for (let i = 0; i < QUOTA - 2; i++) {
          const checked = await client.callTool({
            name: 'service_check_status',
            arguments: { reference: 'svc_pa_unknown' },
          });
          assert.equal(envelopeOf(checked).status, 'unknown_reference');
        }
        const held = await connected[1]!.client.callTool({ name: 'record', arguments: { text: 'one' } });
        assert.equal(envelopeOf(held).status, 'held');
        const last = await raw.check();
        assert.equal(last.status, 200, last.text);
        assert.equal(last.headers.get('ratelimit-limit'), String(QUOTA));
        assert.equal(last.headers.get('ratelimit-remaining'), '0');

        const over = await raw.check();
        assert.equal(over.status, 429, over.text);
        assertRpcError(over, -32000);
        assert.match(over.body.error.message, /^Rate limited/);
        assert.ok(Number(over.headers.get('retry-after')) >= 1);
        assert.equal(over.headers.get('ratelimit-remaining'), '0');
        await assert.rejects(client.callTool({ name: 'record', arguments: { text: 'two' } }));
        assert.equal((await holdIds(workspace)).length, 1, 'the refused call made no hold');

        // Everything else still goes through: listing, pings, new sessions.
        assert.ok((await client.listTools()).tools.length > 0);
        await client.ping();
        const fresh = await connect(key);
        assert.ok((await fresh.listTools()).tools.length > 0);
        const list = await raw.send({ jsonrpc: '2.0', id: 99, method: 'tools/list', params: {} });
        assert.equal(list.status, 200);

        // Another key of the same workspace has a quota of its own.
        const second = await createApiKey(t.service.ctx, { workspace, env: 'live' });
        const other = await rawSession(second.key);
        for (let i = 0; i < QUOTA; i++) assert.equal((await other.check()).status, 200);
        assert.equal((await other.check()).status, 429);

        // The next window restores the quota.
        t.clock.advance(60_000);
        const again = await raw.check();
        assert.equal(again.status, 200, again.text);
        assert.equal(again.headers.get('ratelimit-remaining'), String(QUOTA - 1));
        await Promise.all(connected.map(({ client: each }) => each.close()));
      });

      test('in a batch, each tool call counts', async () => {
        const { key } = await workspaceWith();
        t.clock.advance(60_000 - (t.clock.now() % 60_000));
        const raw = await rawSession(key);
        const toolCall = (id: number) => ({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name: 'service_check_status', arguments: { reference: 'svc_pa_unknown' } },
        });
        const batch = await raw.send([
          toolCall(1),
          { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
          toolCall(3),
        ]);
        assert.equal(batch.status, 200, batch.text);
        assert.equal(batch.headers.get('ratelimit-remaining'), String(QUOTA - 2));
        const many = await raw.send(Array.from({ length: QUOTA }, (_, i) => toolCall(10 + i)));
        assert.equal(many.status, 429, many.text);
        assertRpcError(many, -32000);
      });
    });

    describe("a session's tools/call, answered without the SDK's server", () => {
      // The proxy answers a session's plain tools/call itself (src/mcp/tool-call.ts); the same call
      // in a batch of one goes through the SDK's server. Both must say the same, to the byte but for
      // the hold's own reference and times.
      test('answers as the SDK does: allowed, held, denied, unknown, status check, bad arguments', async () => {
        upstream.offer('allowed', 'denied');
        const { workspace, key } = await t.workspace({
          config:
            `${ADMIN}mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n` +
            'tools:\n' +
            '  - { connection: Recorder, tool: record, classification: approval }\n' +
            '  - { connection: Recorder, tool: allowed, classification: allow }\n' +
            '  - { connection: Recorder, tool: denied, classification: deny }\n',
        });
        // A key per session: each sends every call once, within the tool call quota.
        const other = await createApiKey(t.service.ctx, { workspace, env: 'live' });
        const direct = await rawSession(key);
        const batched = await rawSession(other.key);
        // Arguments that are not an object are the SDK's to refuse: the proxy passes such a call on.
        const calls: [string, unknown, 'direct' | 'sdk'][] = [
          ['allowed', { text: 'hello' }, 'direct'],
          ['record', { text: 'held' }, 'direct'],
          ['denied', { text: 'no' }, 'direct'],
          ['nope', {}, 'direct'],
          ['service_check_status', { reference: 'svc_pa_unknown' }, 'direct'],
          ['allowed', ['not', 'an', 'object'], 'sdk'],
        ];
        const normalized = (text: string) =>
          text
            .replace(/svc_pa_[A-Za-z0-9_-]+/g, 'svc_pa_REF')
            .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'TIME');
        for (const [index, [name, args, path]] of calls.entries()) {
          const message = {
            jsonrpc: '2.0',
            id: 100 + index,
            method: 'tools/call',
            params: { name, arguments: args },
          };
          const single = await direct.send(message);
          const inBatch = await batched.send([message]);
          assert.equal(single.status, inBatch.status, `${name}: ${single.text}`);
          assert.equal(single.headers.get('content-type'), inBatch.headers.get('content-type'));
          assert.equal(single.headers.get('cache-control'), inBatch.headers.get('cache-control'));
          assert.equal(normalized(single.text), normalized(inBatch.text), name);
          // The proxy's own answer, with nothing to stream before it, goes in one piece; the SDK's streams.
          assert.equal(single.headers.get('content-length') !== null, path === 'direct', `${name}: ${path}`);
          assert.equal(inBatch.headers.get('content-length'), null);
        }
        // Both sessions' calls were made: the held ones are two holds, one per session.
        assert.equal((await holdIds(workspace)).length, 2);
        assert.deepEqual(
          upstream.calls.filter((made) => made.name === 'allowed').map((made) => made.arguments),
          [{ text: 'hello' }, { text: 'hello' }],
        );
      });
    });

    describe('identical calls are one operation per caller, whatever the session', () => {
      /** A tools/call as a hosted assistant sends it: a fresh session each time, JSON-RPC id 1 always. */
      async function callAsHostedClient(key: string, text: string) {
        const { send } = await rawSession(key);
        const answer = await send({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'record', arguments: { text } },
        });
        const [message] = await rpcMessages(new Response(answer.text, { headers: answer.headers }));
        return JSON.parse(message.result.content[1].text).service as Envelope;
      }

      /** A 2026-07-28 request: no initialize, no session, the protocol version on each request. */
      async function statelessCall(key: string, text: string) {
        const answer = await post('/mcp/rec', {
          key,
          headers: { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'record' },
          body: {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: {
              name: 'record',
              arguments: { text },
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientInfo': { name: 'stateless', version: '1' },
                'io.modelcontextprotocol/clientCapabilities': {},
              },
            },
          },
        });
        assert.equal(answer.status, 200, answer.text);
        const [message] = await rpcMessages(new Response(answer.text, { headers: answer.headers }));
        return JSON.parse(message.result.content[1].text).service as Envelope;
      }

      test('a new session per call, id 1 every time, 2026 requests without a session: one hold', async () => {
        const { workspace, key } = await workspaceWith();
        const held = await callAsHostedClient(key, 'pay 10');
        assert.equal(held.status, 'held');
        for (let i = 0; i < 3; i++) {
          const again = await callAsHostedClient(key, 'pay 10');
          assert.equal(again.reference, held.reference);
          assert.equal(again.deduplicated, true);
        }
        // The SDK's client, 2025 and 2026, and a raw stateless request: the same caller, the same hold.
        assert.equal((await record(await connect(key), 'pay 10')).reference, held.reference);
        const modern = await connect(key, { negotiation: 'auto' });
        assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
        assert.equal((await record(modern, 'pay 10')).reference, held.reference);
        assert.equal((await statelessCall(key, 'pay 10')).reference, held.reference);
        // Other arguments are another call; another key is another caller.
        assert.notEqual((await callAsHostedClient(key, 'pay 11')).reference, held.reference);
        const otherKey = await createApiKey(t.service.ctx, { workspace, env: 'live' });
        assert.notEqual((await callAsHostedClient(otherKey.key, 'pay 10')).reference, held.reference);
        assert.equal((await holdIds(workspace)).length, 3);
      });

      test('after approval the call ran once; repeats in the window get its result, a later one asks again', async () => {
        const { workspace, key } = await workspaceWith();
        const held = await record(await connect(key), 'ship 1');
        await decideAs(t, workspace.id, held.reference, 'approve');
        await until('the approved call to be run', async () =>
          (await getHold(t.service.ctx, workspace.id, held.reference)).status === 'executed'
            ? true
            : undefined,
        );
        const ran = () => upstream.calls.filter((made) => made.arguments.text === 'ship 1').length;
        assert.equal(ran(), 1);
        for (let i = 0; i < 2; i++) {
          const repeat = await callAsHostedClient(key, 'ship 1');
          assert.equal(repeat.status, 'executed');
          assert.equal(repeat.reference, held.reference);
        }
        assert.equal(ran(), 1, 'a repeat in the window never runs the call again');
        // The default window is 5 minutes from the result.
        await t.clock.advance(5 * 60_000);
        const later = await callAsHostedClient(key, 'ship 1');
        assert.equal(later.status, 'held');
        assert.notEqual(later.reference, held.reference);
      });

      test('a rejection answers repeats in the window, then the call is asked anew; a rule sets the window', async () => {
        const { workspace, key } = await t.workspace({
          config:
            `${ADMIN}mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n` +
            'rules:\n  - { name: Recording, connection: Recorder, tool: record, effect: approval,' +
            ' approvers: [role:admin], repeat_window_minutes: 30 }\n',
        });
        const held = await callAsHostedClient(key, 'wipe');
        await decideAs(t, workspace.id, held.reference, 'reject');
        await t.clock.advance(29 * 60_000);
        const repeat = await callAsHostedClient(key, 'wipe');
        assert.deepEqual([repeat.status, repeat.reference], ['denied', held.reference]);
        await t.clock.advance(60_000);
        const asked = await callAsHostedClient(key, 'wipe');
        assert.equal(asked.status, 'held');
        assert.notEqual(asked.reference, held.reference);
      });

      test('X-Service-Session narrows the scope: the same one across sessions is one hold, another is another', async () => {
        const { workspace, key } = await workspaceWith();
        const first = await connect(key, { session: 'job-42' });
        const held = await record(first, 'ship it');
        await first.close();
        const reconnected = await connect(key, { session: 'job-42' });
        const again = await record(reconnected, 'ship it');
        assert.equal(again.reference, held.reference);
        assert.equal(again.deduplicated, true);
        const modern = await connect(key, { session: 'job-42', negotiation: 'auto' });
        assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
        assert.equal((await record(modern, 'ship it')).reference, held.reference);
        const elsewhere = await connect(key, { session: 'job-43' });
        assert.notEqual((await record(elsewhere, 'ship it')).reference, held.reference);
        // Without the header the caller's agent is the scope: neither job's hold.
        const unscoped = await record(await connect(key), 'ship it');
        assert.notEqual(unscoped.reference, held.reference);
        assert.equal((await holdIds(workspace)).length, 3);
      });

      test('the hold records the MCP session it was asked in (context.mcp_session), to tell it the decision', async () => {
        const { workspace, key } = await workspaceWith();
        const { session, send } = await rawSession(key);
        const answer = await send({
          jsonrpc: '2.0',
          id: 5,
          method: 'tools/call',
          params: { name: 'record', arguments: { text: 'context' } },
        });
        const [message] = (await rpcMessages(new Response(answer.text, { headers: answer.headers }))).filter(
          (each) => each.id === 5,
        );
        const { reference } = JSON.parse(message.result.content[1].text).service as Envelope;
        const hold = await getHold(t.service.ctx, workspace.id, reference);
        assert.equal(hold.context.mcp_session, session);
        assert.equal(hold.context.session, undefined, 'no X-Service-Session was sent');
      });
    });
  });
}
