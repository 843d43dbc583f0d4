/** Bad input, bad keys and foreign references: the contract's error, nothing stored, no value echoed. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { revokeApiKey } from '../src/services/api-keys.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

/** A value no error may repeat. */
const MARKER = 'zq9MARKERzq9';

for (const backend of backends) {
  describe(`errors on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let key: string;
    let workspaceId: string;
    before(async () => {
      t = await startTestService(backend);
      const ws = await t.workspace();
      key = ws.key;
      workspaceId = ws.workspace.id;
    });
    after(() => t?.close());

    const holdCount = async () =>
      (await t.service.ctx.db.one<{ n: number }>('SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1', [
        workspaceId,
      ]))!.n;
    const post = (body: unknown, headers?: Record<string, string>) =>
      call(t.url, 'POST', '/api/v1/holds', { key, body, headers });
    const postRaw = (raw: string, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
      call(t.url, 'POST', '/api/v1/holds', { key, raw, headers });

    test('401 unauthorized with WWW-Authenticate for missing, malformed, unknown and revoked keys', async () => {
      const { createApiKey } = await import('../src/services/api-keys.ts');
      const { workspace } = await t.workspace();
      const revoked = await createApiKey(t.service.ctx, { workspace, env: 'live' });
      await revokeApiKey(t.service.ctx, revoked.id);
      const unknown = `svc_live_${'A'.repeat(43)}`;
      for (const authorization of [
        undefined,
        'Bearer',
        `Basic ${key}`,
        'Bearer svc_live_short',
        `Bearer ${unknown}`,
        `Bearer ${revoked.key}`,
      ]) {
        const answer = await call(t.url, 'POST', '/api/v1/holds', {
          body: submission(),
          headers: authorization ? { authorization } : {},
        });
        assert.equal(answer.status, 401, String(authorization));
        assert.deepEqual(answer.body, { error: 'unauthorized' });
        assert.equal(answer.headers.get('www-authenticate'), 'Bearer');
      }
    });

    test('400 invalid_json for a body that is not JSON, or no body at all', async () => {
      const before = await holdCount();
      for (const raw of ['{"tool_name":', `{${MARKER}}`, '', 'nul']) {
        const answer = await postRaw(raw);
        assert.equal(answer.status, 400);
        assert.deepEqual(answer.body, { error: 'invalid_json' });
      }
      assert.equal(await holdCount(), before);
    });

    test('413 payload_too_large over 1 MiB', async () => {
      const answer = await post(submission({ arguments: { blob: 'x'.repeat(1024 * 1024) } }));
      assert.equal(answer.status, 413);
      assert.deepEqual(answer.body, { error: 'payload_too_large' });
    });

    test('415 unsupported_media_type for a body that is not application/json', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
        const answer = await postRaw(JSON.stringify(submission()), { 'content-type': type });
        assert.equal(answer.status, 415, type);
        assert.deepEqual(answer.body, { error: 'unsupported_media_type' });
      }
      const charset = await postRaw(JSON.stringify(submission()), {
        'content-type': 'application/json; charset=utf-8',
      });
      assert.equal(charset.status, 201);
    });

    test('422 validation_failed names every bad field, never echoing the value', async () => {
      const before = await holdCount();
      const cases: [Record<string, unknown>, string][] = [
        [{ tool_name: undefined }, 'tool_name'],
        [{ tool_name: '' }, 'tool_name'],
        [{ tool_name: `bad ${MARKER}` }, 'tool_name'],
        [{ tool_name: 'x'.repeat(201) }, 'tool_name'],
        [{ tool_name: 42 }, 'tool_name'],
        [{ arguments: [MARKER] }, 'arguments'],
        [{ arguments: null }, 'arguments'],
        [{ arguments: MARKER }, 'arguments'],
        [{ context: [1] }, 'context'],
        [{ agent_identity: undefined }, 'agent_identity'],
        [{ agent_identity: MARKER }, 'agent_identity'],
        [{ agent_identity: { label: MARKER } }, 'agent_identity.id'],
        [{ agent_identity: { id: '' } }, 'agent_identity.id'],
        [{ agent_identity: { id: 'x'.repeat(201) } }, 'agent_identity.id'],
        [{ agent_identity: { id: 'a', label: 'x'.repeat(201) } }, 'agent_identity.label'],
        [{ agent_identity: { id: 7 } }, 'agent_identity.id'],
        [{ idempotency_key: undefined }, 'idempotency_key'],
        [{ idempotency_key: '' }, 'idempotency_key'],
        [{ idempotency_key: 'k'.repeat(256) }, 'idempotency_key'],
        [{ idempotency_key: 12 }, 'idempotency_key'],
      ];
      for (const [override, field] of cases) {
        const answer = await post(submission(override));
        assert.equal(answer.status, 422, field);
        assert.equal(answer.body.error, 'validation_failed');
        assert.equal(answer.body.issues[0].field, field);
        assert.equal(answer.body.detail, `${field}: ${answer.body.issues[0].message}`);
        assert.equal(answer.body.docs, `${t.url}/docs/holds`);
        assert.ok(!answer.text.includes(MARKER), `${field} echoed its value`);
      }
      const several = await post({ tool_name: '', agent_identity: {}, idempotency_key: 5 });
      assert.deepEqual(
        several.body.issues.map((issue: { field: string }) => issue.field),
        ['tool_name', 'agent_identity.id', 'idempotency_key'],
      );
      assert.ok(!(await post([MARKER])).text.includes(MARKER));
      assert.equal(await holdCount(), before);
    });

    test('arguments nested deeper than 32 levels are refused', async () => {
      let deep: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 40; i++) deep = { deeper: deep };
      const answer = await post(submission({ arguments: deep }));
      assert.equal(answer.status, 422);
      assert.equal(answer.body.issues[0].field, 'arguments');
      let ok: Record<string, unknown> = { leaf: 1 };
      for (let i = 0; i < 30; i++) ok = { deeper: ok };
      assert.equal((await post(submission({ arguments: ok }))).status, 201);
    });

    test('unknown top-level fields are ignored; odd keys in arguments are kept as they are', async () => {
      const args = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1, "amount": 5}');
      const answer = await post({ ...submission({ arguments: args }), surprise: MARKER });
      assert.equal(answer.status, 201);
      const stored = await t.service.ctx.db.one<{ arguments: string }>(
        'SELECT arguments FROM holds WHERE id = $1',
        [answer.body.id],
      );
      assert.equal(stored!.arguments, '{"__proto__":{"polluted":true},"constructor":1,"amount":5}');
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
    });

    test('404 not_found for unknown, malformed and foreign references, alike', async () => {
      const other = await t.workspace();
      const foreign = await post(submission());
      const answers = await Promise.all([
        call(t.url, 'GET', `/api/v1/holds/svc_pa_${'A'.repeat(22)}`, { key: other.key }),
        call(t.url, 'GET', `/api/v1/holds/${MARKER}`, { key: other.key }),
        call(t.url, 'GET', `/api/v1/holds/${foreign.body.id}`, { key: other.key }),
        call(t.url, 'POST', `/api/v1/holds/${foreign.body.id}/wait`, { key: other.key }),
      ]);
      for (const answer of answers) {
        assert.equal(answer.status, 404);
        assert.deepEqual(answer.body, { error: 'not_found' });
      }
    });

    test('404 for unknown routes, 405 with Allow for a wrong method', async () => {
      const unknown = await call(t.url, 'GET', '/api/v1/nothing', { key });
      assert.equal(unknown.status, 404);
      assert.deepEqual(unknown.body, { error: 'not_found' });
      const wrong = await call(t.url, 'DELETE', '/api/v1/holds', { key });
      assert.equal(wrong.status, 405);
      assert.deepEqual(wrong.body, { error: 'method_not_allowed' });
      assert.equal(wrong.headers.get('allow'), 'POST');
      assert.equal((await call(t.url, 'PUT', '/api/v1/audit/verify', { key })).status, 405);
    });

    test('random bodies never cause a 5xx and never an echo (property)', async () => {
      // A workspace of its own: the property's requests stay within one quota window.
      const own = await t.workspace();
      const count = async () =>
        (await t.service.ctx.db.one<{ n: number }>(
          'SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1',
          [own.workspace.id],
        ))!.n;
      const before = await count();
      const value = fc.oneof(
        fc.constant(MARKER),
        fc.string(),
        fc.integer(),
        fc.double(),
        fc.boolean(),
        fc.constant(null),
        fc.array(fc.string(), { maxLength: 3 }),
        fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.integer(), fc.constant(MARKER)), { maxKeys: 3 }),
      );
      const body = fc.oneof(
        fc.record(
          {
            tool_name: fc.oneof(value, fc.stringMatching(/^[A-Za-z0-9_.:/-]{0,210}$/)),
            arguments: value,
            agent_identity: fc.oneof(value, fc.record({ id: value, label: value }, { requiredKeys: [] })),
            context: value,
            idempotency_key: fc.oneof(value, fc.constant('')),
          },
          { requiredKeys: [] },
        ),
        fc.jsonValue(),
      );
      let created = 0;
      await fc.assert(
        fc.asyncProperty(body, async (candidate) => {
          const answer = await call(t.url, 'POST', '/api/v1/holds', { key: own.key, body: candidate });
          assert.ok(answer.status < 500, `status ${answer.status}`);
          assert.ok([200, 201, 400, 422].includes(answer.status), `status ${answer.status}`);
          if (answer.status === 201) created += 1;
          if (answer.status >= 400) assert.ok(!answer.text.includes(MARKER), 'echoed a value');
        }),
        { numRuns: 100 },
      );
      assert.equal(await count(), before + created);
    });
  });
}
