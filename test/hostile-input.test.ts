/**
 * Hostile input beyond the Core API's bodies (errors.test.ts): the app's forms posted with any
 * fields, as forms or as JSON; the MCP endpoint with malformed JSON-RPC, huge and deeply nested
 * messages; URLs and cookies that cannot be decoded; and what the log says of a request. No 5xx,
 * nothing echoed in an error, no change from a refused request, no secret in the log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { backends, sqlite, type Storage } from './support/backends.ts';
import { appClient, type Session } from './support/app-client.ts';
import { call, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { killServerProcesses, startServerProcess } from './support/server-process.ts';
import { startTestService, type TestService } from './support/service.ts';

const MARKER = 'hostile-marker-5521';
const CONFIG = (upstream: string) =>
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream}" }\n` +
  'tools:\n  - { connection: Recorder, tool: record, classification: allow }\n';

/** A value of any JSON shape, the marker among them. */
const anyValue = fc.oneof(
  fc.constant(MARKER),
  fc.string(),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.string(), fc.constant(MARKER)), { maxLength: 3 }),
  fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.constant(MARKER)), { maxKeys: 3 }),
);

function nested(depth: number): unknown {
  let value: unknown = MARKER;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

after(killServerProcesses);

for (const backend of backends) {
  describe(`hostile input on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let key: string;
    let workspaceId: string;
    let admin: Session;
    const app = appClient(() => t);
    const count = async (table: string) =>
      Number(
        (await t.service.ctx.db.one<{ n: number }>(
          `SELECT COUNT(*) AS n FROM ${table} WHERE workspace_id = $1`,
          [workspaceId],
        ))!.n,
      );

    before(async () => {
      upstream = await startRecordingUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      const created = await t.workspace({ config: CONFIG(upstream.url) });
      key = created.key;
      workspaceId = created.workspace.id;
      admin = await app.signIn(created.workspace, 'admin@acme.test');
    });
    after(async () => {
      await t?.close();
      await upstream?.close();
    });

    test("the app's forms, posted with any fields as a form or as JSON: no 5xx; a refusal changes nothing", async () => {
      const hold = (await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() })).body
        .id as string;
      // Every form of the app but sign-out (it would end the session the property runs in).
      const paths = [
        '/app/admin/members',
        '/app/admin/members/admin%40acme.test',
        '/app/admin/members/admin%40acme.test/delete',
        '/app/admin/groups',
        '/app/admin/groups/x',
        '/app/admin/groups/x/delete',
        '/app/admin/keys',
        '/app/admin/keys/key_x/revoke',
        '/app/admin/branding',
        '/app/admin/webhook',
        '/app/admin/webhook/rotate',
        '/app/admin/webhook/delete',
        '/app/admin/webhook/redeliver',
        '/app/admin/rules',
        '/app/admin/rules/x',
        '/app/admin/rules/x/delete',
        '/app/admin/tools',
        '/app/admin/mcp-servers',
        '/app/admin/mcp-servers/rec',
        '/app/admin/mcp-servers/rec/test',
        '/app/admin/mcp-servers/rec/delete',
        `/app/holds/${hold}/decide`,
        '/app/widget/token',
        '/app/settings',
        '/app/login',
        '/app/setup',
        `/d/${'x'.repeat(43)}`,
      ];
      // The fields the app's own forms have, read from its pages, so every validation branch is reached.
      const names = new Set(['x', 'confirm', 'mode']);
      for (const page of [
        '/app/admin/members',
        '/app/admin/members/admin%40acme.test',
        '/app/admin/keys',
        '/app/admin/branding',
        '/app/admin/webhook',
        '/app/admin/rules',
        '/app/admin/rules?new',
        '/app/admin/mcp-servers',
        '/app/widget',
        '/app/settings',
        `/app/holds/${hold}`,
      ]) {
        for (const [, name] of (await app.get(admin, page)).text.matchAll(/name="([^"]+)"/g))
          names.add(name!);
      }
      names.delete('_csrf');
      assert.ok(names.size > 20, `form fields found: ${[...names].join(', ')}`);
      const value = fc.oneof(
        anyValue,
        fc.constantFrom('yes', 'create', 'edit', 'admin', 'approve', 'reject'),
      );
      const fields = fc.dictionary(fc.constantFrom(...names), value, { maxKeys: 8 });
      let run = 0;
      const asJson = fc.record({ _csrf: fc.oneof(fc.constant(admin.csrf), anyValue) });
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...paths),
          fields,
          asJson,
          fc.boolean(),
          async (path, form, csrf, json) => {
            // Sign-in and decision links share 20 tries a minute per address: a new window now and then.
            if (++run % 15 === 0) t.clock.advance(60_000);
            const entriesBefore = await count('evidence');
            const body = json
              ? JSON.stringify({ ...form, ...csrf })
              : new URLSearchParams(
                  Object.entries({
                    ...form,
                    _csrf: typeof csrf._csrf === 'string' ? csrf._csrf : MARKER,
                  }).map(([name, value]) => [
                    name,
                    typeof value === 'string' ? value : JSON.stringify(value),
                  ]),
                ).toString();
            const response = await fetch(t.url + path, {
              method: 'POST',
              headers: {
                'content-type': json ? 'application/json' : 'application/x-www-form-urlencoded',
                cookie: `approvals_session=${admin.cookie}`,
              },
              body,
              redirect: 'manual',
            });
            await response.text();
            assert.ok(response.status < 500, `${path}: ${response.status}`);
            if (response.status >= 400)
              assert.equal(await count('evidence'), entriesBefore, `${path} changed state`);
          },
        ),
        { numRuns: 300 },
      );
      // The session still works: nothing above signed the admin out or broke the workspace.
      assert.equal((await app.get(admin, '/app/inbox')).status, 200);
    });

    test('URLs and cookies that cannot be decoded: a plain 404 or no session, never a quote', async () => {
      for (const path of [`/api/v1/holds/%zz${MARKER}`, `/d/%E0%A4%A${MARKER}`, `/app/%ff%${MARKER}`]) {
        const answer = await call(t.url, 'GET', path, { key });
        assert.equal(answer.status, 404, path);
        assert.deepEqual(answer.body, { error: 'not_found' });
      }
      const page = await fetch(`${t.url}/app/inbox`, {
        headers: { cookie: `approvals_session=%E0%A4%A${MARKER}` },
        redirect: 'manual',
      });
      const text = await page.text();
      assert.ok(page.status < 500, `status ${page.status}`);
      assert.ok(!text.includes(MARKER));
    });

    /** One 2025-era session, initialized by hand: its id and the headers of its requests. */
    async function mcpSession() {
      const headers = {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const init = await fetch(`${t.url}/mcp/rec`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 0,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'fuzz', version: '1' },
          },
        }),
      });
      await init.text();
      const session = init.headers.get('mcp-session-id');
      assert.ok(session);
      return { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    }

    test('the MCP endpoint: deep nesting, huge arguments, long tool names are refused and make no hold', async () => {
      const headers = await mcpSession();
      const holdsBefore = await count('holds');
      const post = async (body: unknown) => {
        const response = await fetch(`${t.url}/mcp/rec`, {
          method: 'POST',
          headers,
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
        return { status: response.status, text: await response.text() };
      };
      const toolCall = (name: string, args: unknown) => ({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args },
      });
      // Written out as text: JSON.stringify itself cannot go this deep.
      const depth = 100_000;
      const deep = await post(
        `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`,
      );
      assert.equal(deep.status, 400);
      assert.match(deep.text, /-32600/);
      const deepArgs = await post(toolCall('record', nested(36)));
      assert.match(deepArgs.text, /-32602/);
      const longName = await post(toolCall(`${MARKER}${'n'.repeat(300)}`, {}));
      assert.match(longName.text, /-32602/);
      // A name the upstream does not list is refused without repeating it (the SDK's own text would).
      const unknown = await post(toolCall(`${MARKER}-tool`, {}));
      assert.match(unknown.text, /-32602/);
      const huge = await post(toolCall('record', { text: 'x'.repeat(2 * 1024 * 1024) }));
      assert.equal(huge.status, 413);
      for (const answer of [deep, deepArgs, longName, unknown, huge])
        assert.ok(!answer.text.includes(MARKER));
      assert.equal(await count('holds'), holdsBefore, 'no hold from a refused call');
    });

    test('the MCP endpoint with random JSON-RPC: no 5xx, no value echoed in an error', async () => {
      const headers = await mcpSession();
      const method = fc.oneof(
        fc.constantFrom(
          'tools/call',
          'tools/list',
          'initialize',
          'ping',
          'resources/read',
          'logging/setLevel',
        ),
        fc.constant(MARKER),
        fc.string(),
      );
      const message = fc.record(
        {
          jsonrpc: fc.oneof(fc.constant('2.0'), anyValue),
          // The id comes back in every answer, as JSON-RPC wants: it is not an echoed value.
          id: fc.oneof(fc.integer(), fc.string()),
          method: fc.oneof(method, anyValue),
          params: fc.oneof(
            anyValue,
            fc.record({ name: fc.oneof(fc.constantFrom('record', 'nope'), anyValue), arguments: anyValue }),
          ),
        },
        { requiredKeys: [] },
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(message, fc.array(message, { maxLength: 3 }), fc.jsonValue()),
          async (body) => {
            const holdsBefore = await count('holds');
            const response = await fetch(`${t.url}/mcp/rec`, {
              method: 'POST',
              headers,
              body: JSON.stringify(body),
            });
            const text = await response.text();
            assert.ok(response.status < 500, `status ${response.status}`);
            // A batch may hold a good call beside the bad ones; a single refused message stores nothing.
            if (response.status >= 400 || (!Array.isArray(body) && text.includes('"error"'))) {
              assert.ok(!text.includes(MARKER), `echoed: ${text.slice(0, 200)}`);
              assert.equal(await count('holds'), holdsBefore, 'a refused message made a hold');
            }
          },
        ),
        { numRuns: 150 },
      );
    });
  });
}

describe('what the log says of a request', { skip: sqlite.skip }, () => {
  let storage: Storage;
  after(() => storage?.drop());

  test('no decision or sign-in token from a path, no query, no key reaches the log', async () => {
    storage = await sqlite.create();
    const server = await startServerProcess(storage, { LOG_LEVEL: 'debug' });
    const secrets = {
      decision: `dl${'A'.repeat(41)}`,
      signIn: `si${'B'.repeat(41)}`,
      enrol: `en${'D'.repeat(41)}`,
      query: `q-${MARKER}`,
      key: `svc_live_${'C'.repeat(43)}`,
    };
    await fetch(`${server.url}/d/${secrets.decision}`);
    await fetch(`${server.url}/d/${secrets.decision}`, { method: 'POST' });
    await fetch(`${server.url}/app/login/${secrets.signIn}`);
    await fetch(`${server.url}/app/login/${secrets.signIn}`, { method: 'POST' });
    await fetch(`${server.url}/app/settings/passkeys/enrol/${secrets.enrol}`);
    await fetch(`${server.url}/api/v1/holds?token=${secrets.query}`, {
      headers: { authorization: `Bearer ${secrets.key}` },
    });
    await fetch(`${server.url}/mcp/any`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secrets.key}` },
    });
    server.child.kill('SIGTERM');
    await server.exited;
    const log = server.output();
    assert.match(log, /\/d\/\[redacted\]/, 'the request is logged, its token masked');
    for (const [name, secret] of Object.entries(secrets))
      assert.ok(!log.includes(secret), `${name} in the log`);
  });
});
