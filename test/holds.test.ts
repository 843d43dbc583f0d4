/** The Hold API against a real server: every row of the state tables, idempotency and /wait. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { settles, until } from './support/wait.ts';

const TOOLS = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: second@acme.test, name: Second, role: admin }
  - { email: viewer@acme.test, name: Viewer, role: viewer }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_ledger, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
`;

for (const backend of backends) {
  describe(`hold API on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    const submit = (key: string, body: unknown) => call(t.url, 'POST', '/api/v1/holds', { key, body });
    const get = (key: string, id: string) => call(t.url, 'GET', `/api/v1/holds/${id}`, { key });

    test('allow rule: POST allowed, stored auto_allowed, no decision, no deadline', async () => {
      const { key } = await t.workspace({ config: TOOLS });
      const created = await submit(key, submission({ tool_name: 'read_balance' }));
      assert.equal(created.status, 201);
      assert.match(created.body.id, /^svc_pa_[A-Za-z0-9_-]{22,}$/);
      assert.equal(created.body.status, 'allowed');
      assert.equal(created.body.status_url, `${t.url}/a/${created.body.id}`);
      const record = await get(key, created.body.id);
      assert.equal(record.status, 200);
      assert.equal(record.body.status, 'auto_allowed');
      assert.equal(record.body.decision, null);
      assert.equal(record.body.expires_at, null);
      assert.deepEqual(record.body.approvals, { required: 0, received: 0 });
    });

    test('deny rule: POST denied, stored rejected, verdict reject by rule with its reason', async () => {
      const { key } = await t.workspace({ config: TOOLS });
      const created = await submit(key, submission({ tool_name: 'delete_ledger' }));
      assert.equal(created.status, 201);
      assert.equal(created.body.status, 'denied');
      const { body } = await get(key, created.body.id);
      assert.equal(body.status, 'rejected');
      assert.equal(body.decision.verdict, 'reject');
      assert.equal(body.decision.channel, 'rule');
      assert.equal(body.decision.reason, 'Denied by rule: Tool classified deny');
      assert.ok(Date.parse(body.decision.decided_at) > 0);
    });

    test('a new tool is registered and held for approval (fail-closed), with the full record', async () => {
      const { key } = await t.workspace();
      const before = Date.now();
      const created = await submit(
        key,
        submission({ tool_name: 'brand_new.tool', agent_identity: { id: 'bot-1', label: 'Bot' } }),
      );
      assert.equal(created.body.status, 'pending');
      const { body } = await get(key, created.body.id);
      assert.equal(body.status, 'pending');
      assert.equal(body.tool_name, 'brand_new.tool');
      assert.equal(body.connection, 'SDK');
      assert.deepEqual(body.agent_identity, { id: 'bot-1', label: 'Bot' });
      assert.equal(body.environment, 'live');
      assert.deepEqual(body.approvals, { required: 1, received: 0 });
      assert.equal(body.decision, null);
      const created_at = Date.parse(body.created_at);
      assert.ok(created_at >= before - 1000);
      assert.equal(Date.parse(body.expires_at) - created_at, 240 * 60_000);
    });

    test('pending then approved: verdict approve through the inbox', async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const { body: created } = await submit(key, submission());
      assert.equal(created.status, 'pending');
      const result = await decideAs(t, workspace.id, created.id, 'approve', 'admin@acme.test', 'fine');
      assert.equal(result.outcome, 'recorded');
      const { body } = await get(key, created.id);
      assert.equal(body.status, 'approved');
      assert.equal(body.decision.verdict, 'approve');
      assert.equal(body.decision.channel, 'inbox');
      assert.equal(body.decision.reason, 'fine');
      assert.deepEqual(body.approvals, { required: 1, received: 1 });
    });

    test('pending then rejected: the comment is the reason; later decisions find it closed', async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const { body: created } = await submit(key, submission());
      await decideAs(t, workspace.id, created.id, 'reject', 'admin@acme.test', 'too much');
      const { body } = await get(key, created.id);
      assert.equal(body.status, 'rejected');
      assert.deepEqual([body.decision.verdict, body.decision.reason], ['reject', 'too much']);
      const late = await decideAs(t, workspace.id, created.id, 'approve', 'second@acme.test');
      assert.equal(late.outcome, 'closed');
      assert.equal((await get(key, created.id)).body.status, 'rejected');
    });

    test('only eligible members decide, and each only once', async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const { body: created } = await submit(key, submission());
      assert.equal(
        (await decideAs(t, workspace.id, created.id, 'approve', 'viewer@acme.test')).outcome,
        'not_an_approver',
      );
      assert.equal((await get(key, created.id)).body.status, 'pending');
    });

    test('pending then the deadline passes: expired, no decision, never an approval', async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const { body: created } = await submit(key, submission());
      t.clock.advance(240 * 60_000 + 1000);
      try {
        const { body } = await get(key, created.id);
        assert.equal(body.status, 'expired');
        assert.equal(body.decision, null);
        const late = await decideAs(t, workspace.id, created.id, 'approve');
        assert.equal(late.outcome, 'closed');
        assert.equal((await get(key, created.id)).body.status, 'expired');
      } finally {
        t.clock.advance(-(240 * 60_000 + 1000));
      }
    });

    test('the deadline worker expires holds nobody reads', async () => {
      const { workspace, key } = await t.workspace({ config: TOOLS });
      const { body: created } = await submit(key, submission());
      // Moving the clock runs a sweep at the new time; nobody reads the hold before it is expired.
      await t.clock.advance(240 * 60_000 + 1000);
      try {
        const { status } = (await t.service.ctx.db.one<{ status: string }>(
          'SELECT status FROM holds WHERE id = $1',
          [created.id],
        ))!;
        assert.equal(status, 'expired');
        const verify = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal(verify.body.valid, true);
        void workspace;
      } finally {
        t.clock.advance(-(240 * 60_000 + 1000));
      }
    });

    test('a test key records environment test', async () => {
      const { workspace } = await t.workspace();
      const { createApiKey } = await import('../src/services/api-keys.ts');
      const { key } = await createApiKey(t.service.ctx, { workspace, env: 'test' });
      assert.match(key, /^svc_test_/);
      const { body: created } = await submit(key, submission());
      assert.equal((await get(key, created.id)).body.environment, 'test');
    });

    describe('idempotency', () => {
      test('a retry answers 200 with the first body, unchanged, and Idempotent-Replayed', async () => {
        const { key } = await t.workspace();
        const body = submission();
        const first = await submit(key, body);
        const again = await submit(key, { ...body, context: { other: true } });
        assert.equal(first.status, 201);
        assert.equal(first.headers.get('idempotent-replayed'), null);
        assert.equal(again.status, 200);
        assert.equal(again.headers.get('idempotent-replayed'), 'true');
        assert.equal(again.text, first.text);
      });

      test('a replay still answers the first status after the hold was decided', async () => {
        const { workspace, key } = await t.workspace();
        const body = submission();
        const first = await submit(key, body);
        await decideAs(t, workspace.id, first.body.id, 'approve');
        const again = await submit(key, body);
        assert.equal(again.status, 200);
        assert.deepEqual(again.body, first.body);
      });

      test("another workspace's key and tools count in their own workspace only", async () => {
        // What a submission reads under its lock (lock_for_submission on PostgreSQL) is its workspace's.
        const a = await t.workspace({ config: TOOLS });
        const b = await t.workspace();
        const body = submission({ tool_name: 'read_balance', idempotency_key: 'shared-key-1' });
        const first = await submit(a.key, body);
        assert.equal(first.body.status, 'allowed');
        // The same key for another action in B is no mismatch, and A's classification does not apply.
        const other = await submit(b.key, { ...body, arguments: { amount: 7 } });
        assert.equal(other.status, 201);
        assert.notEqual(other.body.id, first.body.id);
        assert.equal(other.body.status, 'pending');
        const replayed = await submit(a.key, body);
        assert.equal(replayed.status, 200);
        assert.equal(replayed.body.id, first.body.id);
      });

      test('the same key for another action is refused with 422 on idempotency_key', async () => {
        const { key } = await t.workspace();
        const body = submission({ arguments: { amount: 1, nested: { a: 1, b: 2 } } });
        await submit(key, body);
        // Key order does not matter (canonical JSON) ...
        const reordered = await submit(key, { ...body, arguments: { nested: { b: 2, a: 1 }, amount: 1 } });
        assert.equal(reordered.status, 200);
        // ... but any other tool, agent or argument does.
        for (const changed of [
          { tool_name: 'other_tool' },
          { agent_identity: { id: 'someone-else' } },
          { arguments: { amount: 2, nested: { a: 1, b: 2 } } },
        ]) {
          const answer = await submit(key, { ...body, ...changed });
          assert.equal(answer.status, 422);
          assert.equal(answer.body.error, 'validation_failed');
          assert.deepEqual(
            answer.body.issues.map((issue: { field: string }) => issue.field),
            ['idempotency_key'],
          );
        }
      });

      test('concurrent submits with one key create exactly one hold', async () => {
        const { key } = await t.workspace();
        const body = submission();
        const answers = await Promise.all(Array.from({ length: 25 }, () => submit(key, body)));
        assert.deepEqual(
          answers.map((a) => a.status).sort((x, y) => x - y),
          [...Array(24).fill(200), 201],
        );
        assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
        const rows = await t.service.ctx.db.all('SELECT id FROM holds WHERE idempotency_key = $1', [
          body.idempotency_key,
        ]);
        assert.equal(rows.length, 1);
      });

      test('keys are scoped to the workspace', async () => {
        const a = await t.workspace();
        const b = await t.workspace();
        const body = submission();
        const first = await submit(a.key, body);
        const second = await submit(b.key, body);
        assert.equal(second.status, 201);
        assert.notEqual(second.body.id, first.body.id);
      });
    });

    describe('wait', () => {
      const wait = (key: string, id: string, body?: unknown) =>
        call(t.url, 'POST', `/api/v1/holds/${id}/wait`, { key, body });

      test('answers at once for a decided hold, with the record', async () => {
        const { key } = await t.workspace({ config: TOOLS });
        const { body: created } = await submit(key, submission({ tool_name: 'delete_ledger' }));
        const started = Date.now();
        const answer = await wait(key, created.id);
        assert.equal(answer.status, 200);
        assert.equal(answer.body.status, 'rejected');
        assert.ok(Date.now() - started < 1000);
      });

      test('wakes when a decision is made, within a second', async () => {
        const { workspace, key } = await t.workspace();
        const { body: created } = await submit(key, submission());
        const events = t.service.ctx.holdEvents;
        const before = events.waiting;
        const waiting = wait(key, created.id, { timeout_seconds: 30 });
        await until('the wait to be registered', () => (events.waiting > before ? true : undefined));
        const decidedAt = Date.now();
        await decideAs(t, workspace.id, created.id, 'approve');
        const answer = await waiting;
        assert.equal(answer.body.status, 'approved');
        assert.ok(Date.now() - decidedAt < 1000);
      });

      test('answers with the pending record at its timeout; no body and no content type is valid', async () => {
        const { key } = await t.workspace();
        const { body: created } = await submit(key, submission());
        const started = Date.now();
        const answer = await wait(key, created.id, { timeout_seconds: 1 });
        assert.equal(answer.status, 200);
        assert.equal(answer.body.status, 'pending');
        assert.ok(Date.now() - started >= 900);
        const bare = await fetch(`${t.url}/api/v1/holds/${created.id}/wait`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          signal: AbortSignal.timeout(200),
        }).catch((error: Error) => error);
        // Still waiting (60 s default) when we gave up: the request was accepted.
        assert.equal((bare as Error).name, 'TimeoutError');
      });

      test('a client that hangs up frees its wait at once', async () => {
        const { key } = await t.workspace();
        const { body: created } = await submit(key, submission());
        const gone = new AbortController();
        const waiting = fetch(`${t.url}/api/v1/holds/${created.id}/wait`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          signal: gone.signal,
        }).catch(() => 'aborted');
        const events = t.service.ctx.holdEvents;
        const before = events.waiting;
        await until('the wait to be registered', () => (events.waiting === before + 1 ? true : undefined));
        gone.abort();
        assert.equal(await waiting, 'aborted');
        await until('the wait to be released before its 60 s timeout', () =>
          events.waiting === before ? true : undefined,
        );
      });

      test('a decision made while the wait reads the hold answers the wait at once', async () => {
        const { workspace, key } = await t.workspace({ config: TOOLS });
        const { body: created } = await submit(key, submission());
        // The wait's read of the hold returns it pending; before that read's answer is looked at,
        // the decision commits and is told (as another instance's would be, any time).
        const db = t.service.ctx.db;
        const one = db.one;
        let decided: Promise<unknown> | undefined;
        db.one = (async (text: string, params?: unknown[]) => {
          const row = await one.call(db, text, params);
          if (!decided && params?.[0] === created.id && text.includes('FROM holds WHERE id')) {
            decided = decideAs(t, workspace.id, created.id, 'approve', 'admin@acme.test');
            await decided;
          }
          return row;
        }) as typeof db.one;
        try {
          // Waited for far less than the wait's 60 s: a wait that missed the decision answers only then.
          const done = await settles(
            'the wait to answer',
            wait(key, created.id, { timeout_seconds: 60 }),
            15_000,
          );
          assert.ok(decided, 'the decision was made during the read');
          assert.equal(done.body.status, 'approved');
        } finally {
          db.one = one;
        }
      });

      test('answers expired at the deadline', async () => {
        const { key } = await t.workspace();
        const { body: created } = await submit(key, submission());
        t.clock.advance(240 * 60_000 - 500);
        try {
          const answer = await wait(key, created.id, { timeout_seconds: 5 });
          assert.equal(answer.body.status, 'expired');
        } finally {
          t.clock.advance(-(240 * 60_000 - 500));
        }
      });

      test('timeout_seconds outside 1..60 or not an integer is a 422', async () => {
        const { key } = await t.workspace();
        const { body: created } = await submit(key, submission());
        for (const timeout_seconds of [0, 61, 1.5, '5', null]) {
          const answer = await wait(key, created.id, { timeout_seconds });
          assert.equal(answer.status, 422);
          assert.equal(answer.body.issues[0].field, 'timeout_seconds');
        }
        assert.equal((await wait(key, created.id, [1])).status, 422);
      });
    });
  });
}
