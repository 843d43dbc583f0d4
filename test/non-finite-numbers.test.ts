/**
 * Issue 37, part 4: JSON.parse reads `1e400` as Infinity, which no canonical JSON (evidence hash,
 * storage) can hold. A non-finite number anywhere in a submission, in its arguments or its context, at
 * any depth, is a 422 `validation_failed` naming the field (-32602 through MCP), never a 500; the value
 * is not echoed and nothing is stored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends } from './support/backends.ts';
import { call, rpcMessages, submission } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = (upstream: string) =>
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream}" }\n` +
  'tools:\n  - { connection: Recorder, tool: record, classification: allow }\n';

/** A submission as text, with `1e400` (or `-1e400`) written where JSON.stringify could not put it. */
const withHuge = (body: Record<string, unknown>) =>
  JSON.stringify(body).replaceAll('"HUGE"', '1e400').replaceAll('"-HUGE"', '-1e400');

for (const backend of backends) {
  describe(`non-finite numbers on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let key: string;
    let workspaceId: string;
    const holds = async () =>
      Number(
        (await t.service.ctx.db.one<{ n: number }>(
          'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1',
          [workspaceId],
        ))!.n,
      );

    before(async () => {
      upstream = await startRecordingUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      const created = await t.workspace({ config: CONFIG(upstream.url) });
      key = created.key;
      workspaceId = created.workspace.id;
    });
    after(async () => {
      await t?.close();
      await upstream?.close();
    });

    test('the Core API: 1e400 in the arguments or the context, at any depth, is a 422 naming the field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [submission({ arguments: { amount: 'HUGE', currency: 'EUR' } }), 'arguments.amount'],
        [submission({ arguments: { lines: [{ price: 1 }, { price: '-HUGE' }] } }), 'arguments.lines.1.price'],
        [submission({ context: { ticket: 'T-1', score: { raw: 'HUGE' } } }), 'context.score.raw'],
      ];
      const before = await holds();
      for (const [body, field] of cases) {
        const answer = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          raw: withHuge(body),
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(answer.status, 422, `${field}: ${answer.text}`);
        assert.equal(answer.body.error, 'validation_failed');
        assert.deepEqual(answer.body.issues, [{ field, message: 'must be a finite number' }]);
        assert.equal(answer.body.detail, `${field}: must be a finite number`);
        assert.doesNotMatch(answer.text, /Infinity|1e400/);
      }
      assert.equal(await holds(), before, 'nothing stored');
      // A large but finite number is an ordinary value.
      const finite = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        raw: JSON.stringify(submission({ arguments: { amount: 1e300 } })),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(finite.status, 201, finite.text);
    });

    test('through MCP: 1e400 in a tool call is -32602 naming the field, and makes no hold', async () => {
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
            clientInfo: { name: 't', version: '1' },
          },
        }),
      });
      await init.text();
      const session = init.headers.get('mcp-session-id');
      assert.ok(session);
      const before = await holds();
      const answer = await fetch(`${t.url}/mcp/rec`, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
        body: withHuge({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'record', arguments: { text: 'hi', payment: { amount: 'HUGE' } } },
        }),
      });
      const [message] = await rpcMessages(answer);
      assert.equal(message.error?.code, -32602, JSON.stringify(message));
      assert.match(message.error.message, /arguments\.payment\.amount: must be a finite number/);
      assert.doesNotMatch(JSON.stringify(message), /Infinity|1e400/);
      // No wait needed to see these absences: the call is refused before a hold or an upstream call is
      // made, and the answer comes after that refusal.
      assert.equal(await holds(), before, 'no hold from a refused call');
      assert.equal(upstream.calls.length, 0, 'nothing sent upstream');
    });
  });
}
