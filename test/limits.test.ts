/**
 * Rate limits (four API buckets, 120/min per workspace; the MCP endpoint's, 600 tool calls/min per API
 * key; 20/min per IP without a key) and the legacy free plan.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { backends, sqlite } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const UNKNOWN_HOLD = `svc_pa_${'A'.repeat(22)}`;

for (const backend of backends) {
  describe(`limits on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend, { env: { LEGACY_FREE_MONTHLY_HOLDS: '3' } });
    });
    after(() => t?.close());

    test('every /api/v1 answer carries RateLimit headers; the 121st call in a window is a 429', async () => {
      const { key } = await t.workspace();
      // Start at the beginning of a window so all 121 calls fall into one.
      const intoWindow = t.clock.now() % 60_000;
      t.clock.advance(60_000 - intoWindow);
      const answers = [];
      for (let i = 0; i < 121; i++)
        answers.push(await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key }));
      const first = answers[0]!;
      assert.equal(first.status, 404);
      assert.equal(first.headers.get('ratelimit-limit'), '120');
      assert.equal(first.headers.get('ratelimit-remaining'), '119');
      const reset = Number(first.headers.get('ratelimit-reset'));
      assert.ok(reset >= 1 && reset <= 60);
      assert.equal(answers[119]!.headers.get('ratelimit-remaining'), '0');
      assert.equal(answers[119]!.status, 404);
      const over = answers[120]!;
      assert.equal(over.status, 429);
      assert.deepEqual(over.body, { error: 'rate_limited' });
      assert.ok(Number(over.headers.get('retry-after')) >= 1);
      assert.equal(over.headers.get('ratelimit-remaining'), '0');

      // The other buckets have quotas of their own.
      const verify = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal(verify.status, 200);
      assert.equal(verify.headers.get('ratelimit-remaining'), '119');
      const wait = await call(t.url, 'POST', `/api/v1/holds/${UNKNOWN_HOLD}/wait`, { key });
      assert.equal(wait.status, 404);
      assert.equal(wait.headers.get('ratelimit-remaining'), '119');

      // A new window restores the quota (fixed window).
      t.clock.advance(60_000);
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key })).status, 404);
    });

    test('the MCP endpoint counts tool calls: 600 a minute per API key, then a JSON-RPC 429', async () => {
      const { workspace, key } = await t.workspace();
      t.clock.advance(60_000 - (t.clock.now() % 60_000));
      // No such server (404), but counted: the count comes first. Other messages are not counted.
      const mcp = (method: string, withKey = key) =>
        call(t.url, 'POST', '/mcp/none', {
          key: withKey,
          body: { jsonrpc: '2.0', id: 1, method, params: { name: 'any', arguments: {} } },
          headers: { accept: 'application/json, text/event-stream' },
        });
      let last;
      for (let i = 0; i < 600; i++) last = await mcp('tools/call');
      assert.equal(last!.status, 404);
      assert.equal(last!.headers.get('ratelimit-limit'), '600');
      assert.equal(last!.headers.get('ratelimit-remaining'), '0');
      const over = await mcp('tools/call');
      assert.equal(over.status, 429);
      assert.equal(over.body.error.code, -32000);
      assert.ok(Number(over.headers.get('retry-after')) >= 1);
      for (let i = 0; i < 5; i++) assert.equal((await mcp('ping')).status, 404, 'other messages pass');
      const api = await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });
      assert.equal(api.headers.get('ratelimit-remaining'), '119', 'the API quota is untouched');
      const { createApiKey } = await import('../src/services/api-keys.ts');
      const second = await createApiKey(t.service.ctx, { workspace, env: 'live' });
      const other = await mcp('tools/call', second.key);
      assert.equal(other.status, 404, 'another key has a quota of its own');
      assert.equal(other.headers.get('ratelimit-remaining'), '599');
      t.clock.advance(60_000);
      assert.notEqual((await mcp('tools/call')).status, 429);
    });

    test('the quota belongs to the workspace, not to the key', async () => {
      const { workspace, key } = await t.workspace();
      const { createApiKey } = await import('../src/services/api-keys.ts');
      const second = await createApiKey(t.service.ctx, { workspace, env: 'live' });
      const a = await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });
      const b = await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key: second.key });
      assert.equal(
        Number(a.headers.get('ratelimit-remaining')) - 1,
        Number(b.headers.get('ratelimit-remaining')),
      );
    });

    test('without a valid key: 20 per minute per IP, then 429 instead of 401', async () => {
      const intoWindow = t.clock.now() % 60_000;
      t.clock.advance(60_000 - intoWindow);
      const answers = [];
      for (let i = 0; i < 21; i++) answers.push(await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`));
      assert.equal(answers[0]!.status, 401);
      assert.equal(answers[0]!.headers.get('ratelimit-limit'), '20');
      assert.equal(answers[19]!.status, 401);
      assert.equal(answers[20]!.status, 429);
      assert.ok(Number(answers[20]!.headers.get('retry-after')) >= 1);
      // The status page shares that quota.
      const page = await call(t.url, 'GET', `/a/${UNKNOWN_HOLD}`);
      assert.equal(page.status, 429);
      t.clock.advance(60_000);
    });

    test('legacy free plan: past the monthly hold limit, 402 hold_limit_reached; retries still answer', async () => {
      const { key } = await t.workspace({ plan: 'legacy_free' });
      const first = submission();
      for (const body of [first, submission(), submission()]) {
        assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key, body })).status, 201);
      }
      const over = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      assert.equal(over.status, 402);
      assert.deepEqual(over.body, { error: 'hold_limit_reached' });
      assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key, body: first })).status, 200);
      // A standard workspace has no such limit.
      const standard = await t.workspace();
      for (let i = 0; i < 4; i++) {
        assert.equal(
          (await call(t.url, 'POST', '/api/v1/holds', { key: standard.key, body: submission() })).status,
          201,
        );
      }
    });

    test('a failing counter lets requests through (fail-open)', async () => {
      const { checkLimit } = await import('../src/web/rate-limiter.ts');
      const broken = { hit: async () => Promise.reject(new Error('counter down')) };
      const limit = await checkLimit(broken, 'k', 120, Date.now());
      assert.equal(limit.allowed, true);
    });
  });
}

describe('MCP_RATE_LIMIT', { skip: sqlite.skip }, () => {
  test('sets the MCP tool-call quota per key; 0 turns it off', async () => {
    for (const [setting, limited] of [
      ['5', true],
      ['0', false],
    ] as const) {
      const t = await startTestService(sqlite, { env: { MCP_RATE_LIMIT: setting } });
      try {
        const { key } = await t.workspace();
        t.clock.advance(60_000 - (t.clock.now() % 60_000));
        const statuses = [];
        for (let i = 0; i < 8; i++) {
          const answer = await call(t.url, 'POST', '/mcp/none', {
            key,
            body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'any', arguments: {} } },
            headers: { accept: 'application/json, text/event-stream' },
          });
          statuses.push(answer.status);
        }
        assert.equal(statuses.indexOf(429), limited ? 5 : -1, `${setting}: ${statuses.join(',')}`);
      } finally {
        await t.close();
      }
    }
  });
});

describe('TRUST_PROXY: whose word on the client address counts', { skip: sqlite.skip }, () => {
  test('behind one proxy, addresses a client puts in X-Forwarded-For make no new client', async () => {
    const t = await startTestService(sqlite, { env: { TRUST_PROXY: 'true' } });
    try {
      const anonymous = (forwardedFor: string) =>
        call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { headers: { 'x-forwarded-for': forwardedFor } });
      // The proxy appends the address it saw (9.9.9.9); what the client sent stands before it.
      const statuses = [];
      for (let i = 0; i < 21; i++) statuses.push((await anonymous(`6.6.6.${i}, 9.9.9.9`)).status);
      assert.deepEqual(statuses.slice(0, 20), Array(20).fill(401));
      assert.equal(statuses[20], 429);
      // Other clients behind the same proxy have quotas of their own.
      assert.equal((await anonymous('8.8.8.8')).status, 401);
    } finally {
      await t.close();
    }
  });

  test('a TRUST_PROXY that is not false, true, a number or addresses is refused at start', () => {
    for (const value of ['everybody', '10.0.0.0/8, nonsense', 'yes', '10.0.0.0/99', '10.0.0.0/x', '::1/129'])
      assert.throws(() => loadConfig({ TRUST_PROXY: value }), /TRUST_PROXY/);
    for (const value of ['false', 'true', '2', '10.0.0.1', '10.0.0.0/8, 192.168.1.1', 'fd00::/8'])
      loadConfig({ TRUST_PROXY: value });
  });
});
