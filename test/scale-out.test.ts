/**
 * Several instances on one PostgreSQL: a long-poll on one wakes on a decision made on another, shared
 * idempotency keys make one hold whichever instance answers, the chain they all append to verifies,
 * rate limits count across instances, each webhook event is delivered once, the roles split the work,
 * and a worker killed with SIGKILL in the middle of its deliveries loses none of them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { postgres, sqlite, type Storage } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { type Receiver, isCheckpointEvent, startReceiver } from './support/receiver.ts';
import { killServerProcesses, startServerProcess } from './support/server-process.ts';
import { decideAs, startTestService, TestClock, type TestService } from './support/service.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { until } from './support/wait.ts';

const ENV = { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001' };

describe('three instances on one PostgreSQL', { skip: postgres.skip }, () => {
  let storage: Storage;
  let instances: TestService[];
  let receiver: Receiver;
  /** One deployment, one time. */
  const clock = new TestClock();

  before(async () => {
    storage = await postgres.create();
    receiver = await startReceiver({ ignore: isCheckpointEvent });
    instances = [];
    // One after the other: the first runs the migrations.
    for (let i = 0; i < 3; i++)
      instances.push(await startTestService(postgres, { storage, env: ENV, clock }));
  });
  after(async () => {
    for (const instance of instances) await instance.stop();
    await storage?.drop();
    await receiver?.close();
  });
  const a = () => instances[0]!;
  const b = () => instances[1]!;
  const c = () => instances[2]!;

  test('a /wait on one instance answers within 1 s of a decision made on another', async () => {
    const { workspace, key } = await a().workspace();
    const hold = await call(a().url, 'POST', '/api/v1/holds', { key, body: submission() });
    assert.equal(hold.body.status, 'pending');
    const changes: string[] = [];
    const stop = c().service.ctx.holdEvents.watch(workspace.id, (event) => changes.push(event));
    const waiting = call(a().url, 'POST', `/api/v1/holds/${hold.body.id}/wait`, {
      key,
      body: { timeout_seconds: 30 },
    });
    await until(
      'the wait to be open on instance A',
      () => a().service.ctx.holdEvents.waiting > 0 || undefined,
    );
    const decided = Date.now();
    await decideAs(b(), workspace.id, hold.body.id, 'approve');
    const answer = await waiting;
    const latency = Date.now() - decided;
    assert.equal(answer.body.status, 'approved');
    assert.ok(latency < 1000, `answered ${latency} ms after the decision`);
    // The third instance hears it on its own connection, not necessarily before A answered.
    await until(
      'the app on a third instance to hear of it too',
      () => changes.includes('changed') || undefined,
    );
    stop();
  });

  test('1,000 concurrent submits over three instances with shared keys: one hold per key', async () => {
    // Ten workspaces of 100 calls each (25 keys, each sent 4 times to different instances), so the
    // 120-a-minute quota of each workspace is not what is measured.
    const workspaces = await Promise.all(Array.from({ length: 10 }, () => a().workspace()));
    const calls = workspaces.flatMap(({ key }, w) =>
      Array.from({ length: 100 }, (_, i) => {
        const body = submission({ idempotency_key: `w${w}-k${i % 25}`, arguments: { n: i % 25 } });
        return { key, body, instance: instances[i % 3]! };
      }),
    );
    const answers = await Promise.all(
      calls.map(({ key, body, instance }) => call(instance.url, 'POST', '/api/v1/holds', { key, body })),
    );
    const byKey = new Map<string, { statuses: number[]; ids: Set<string> }>();
    for (const [index, answer] of answers.entries()) {
      const key = `${calls[index]!.key}|${calls[index]!.body.idempotency_key}`;
      const seen = byKey.get(key) ?? { statuses: [], ids: new Set() };
      seen.statuses.push(answer.status);
      seen.ids.add(answer.body.id);
      byKey.set(key, seen);
    }
    assert.equal(byKey.size, 250);
    for (const { statuses, ids } of byKey.values()) {
      assert.deepEqual(statuses.sort(), [200, 200, 200, 201], 'created once, replayed three times');
      assert.equal(ids.size, 1, 'every answer names the same hold');
    }
    const stored = await a().service.ctx.db.one<{ n: number }>(
      `SELECT COUNT(*) AS n FROM holds WHERE workspace_id IN (${workspaces.map((_, i) => `$${i + 1}`).join(', ')})`,
      workspaces.map(({ workspace }) => workspace.id),
    );
    assert.equal(stored!.n, 250);
    // Every instance appended to the same chains: each verifies, from any instance.
    for (const [index, { key }] of workspaces.entries()) {
      const verify = await call(instances[index % 3]!.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal(verify.body.valid, true);
      assert.equal(verify.body.first_invalid, null);
    }
  });

  test('rate limits count across instances', async () => {
    const { key } = await a().workspace();
    // A fresh minute, so that the window does not turn over between the requests.
    await clock.advance(60_000 - (clock.now() % 60_000));
    const answers = [];
    for (let i = 0; i < 120; i++) {
      answers.push(
        await call(instances[i % 3]!.url, 'GET', '/api/v1/holds/svc_pa_unknownunknownunknown', { key }),
      );
    }
    assert.ok(answers.every((answer) => answer.status === 404));
    assert.equal(answers.at(-1)!.headers.get('ratelimit-remaining'), '0');
    for (const instance of instances) {
      const over = await call(instance.url, 'GET', '/api/v1/holds/svc_pa_unknownunknownunknown', { key });
      assert.equal(over.status, 429, 'the window is the same on every instance');
    }
  });

  test('three webhook workers: every event delivered, none twice', async () => {
    const { workspace, key } = await a().workspace({
      config: `members:\n  - { email: admin@acme.test, name: Admin, role: admin }\ntools:\n  - { connection: SDK, tool: drop_table, classification: deny }\n`,
    });
    await applyConfig(a().service.ctx, workspace, parseConfig(`webhook: { url: "${receiver.url}" }\n`));
    const holds = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        call(instances[i % 3]!.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: 'drop_table' }),
        }),
      ),
    );
    assert.ok(holds.every((hold) => hold.body.status === 'denied'));
    const received = await receiver.waitFor(60, { timeoutMs: 20_000 });
    // Every instance runs a round after the last arrival and finishes what it started: a duplicate
    // (an event claimed twice) would have been sent by then.
    await Promise.all(instances.map((instance) => instance.settled()));
    const deliveries = receiver.requests.map((r) => String(r.headers['x-service-delivery']));
    assert.equal(new Set(deliveries).size, 60, 'every event arrived');
    assert.equal(deliveries.length, 60, 'none arrived twice');
    const referenced = new Set(received.map((r) => JSON.parse(r.body).id));
    assert.deepEqual(referenced, new Set(holds.map((hold) => hold.body.id)));
  });
});

describe('roles, and a worker instance killed with SIGKILL mid-delivery', { skip: postgres.skip }, () => {
  test('an api instance runs no workers; a workers instance serves no API; its jobs survive kill -9', async () => {
    const storage = await postgres.create();
    const hook = await startReceiver({ script: { hang: true }, ignore: isCheckpointEvent });
    const api = await startTestService(postgres, { storage, env: { ...ENV, ROLE: 'api' } });
    let rescuer: TestService | undefined;
    try {
      const { workspace, key } = await api.workspace({
        config: `members:\n  - { email: admin@acme.test, name: Admin, role: admin }\ntools:\n  - { connection: SDK, tool: drop_table, classification: deny }\n`,
      });
      await applyConfig(api.service.ctx, workspace, parseConfig(`webhook: { url: "${hook.url}" }\n`));
      for (let i = 0; i < 10; i++) {
        const body = submission({ tool_name: 'drop_table' });
        assert.equal((await call(api.url, 'POST', '/api/v1/holds', { key, body })).status, 201);
      }
      // Had it a webhook worker, that worker would have run a round and finished its attempts here.
      await api.settled();
      assert.equal(hook.requests.length, 0, 'the api instance delivers nothing');

      const worker = await startServerProcess(storage, { ...ENV, ROLE: 'workers' });
      assert.equal((await call(worker.url, 'GET', '/healthz')).status, 200);
      assert.equal((await call(worker.url, 'GET', '/api/v1/holds/svc_pa_x', { key })).status, 404);
      await hook.waitFor(10, { timeoutMs: 10_000 });
      // Every delivery is in flight (the receiver does not answer) when the worker dies.
      worker.child.kill('SIGKILL');
      assert.deepEqual(await worker.exited, { code: null, signal: 'SIGKILL' });

      hook.script({});
      rescuer = await startTestService(postgres, { storage, env: { ...ENV, ROLE: 'workers' } });
      // The dead worker's claims last 30 s; the rescuer's clock is moved past them.
      await rescuer.clock.advance(31_000);
      await hook.waitFor(20, { timeoutMs: 10_000 });
      const rescued = hook.requests.slice(10).map((request) => String(request.headers['x-service-delivery']));
      assert.equal(new Set(rescued).size, 10, 'every event delivered after the kill');
      await until('every event recorded as delivered', async () => {
        const pending = await api.service.ctx.db.one<{ n: number }>(
          "SELECT COUNT(*) AS n FROM webhook_events WHERE workspace_id = $1 AND state <> 'delivered'",
          [workspace.id],
        );
        return Number(pending!.n) === 0 ? true : undefined;
      });
    } finally {
      await killServerProcesses();
      await rescuer?.stop();
      await api.stop();
      await hook.close();
      await storage.drop();
    }
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe(
  'rate limits in Redis (REDIS_URL)',
  { skip: redisUrl ? undefined : 'TEST_REDIS_URL is not set' },
  () => {
    test('two instances count one window in Redis; while Redis is away requests pass', async () => {
      const target = new URL(redisUrl!);
      const proxy = await startTcpProxy(target.hostname, Number(target.port || 6379));
      const env = { REDIS_URL: `redis://127.0.0.1:${proxy.port}` };
      // A clock that stands still: the 121 requests fall into one minute's window even when the real
      // minute turns while they are sent (it did once, and the 121st passed).
      const clock = new TestClock({ at: Date.now() });
      const first = await startTestService(sqlite, { env, clock });
      const second = await startTestService(sqlite, { storage: first.storage, env, clock });
      try {
        const { key } = await first.workspace();
        const unknown = (instance: TestService) =>
          call(instance.url, 'GET', '/api/v1/holds/svc_pa_unknownunknownunknown', { key });
        for (let i = 0; i < 120; i++) assert.equal((await unknown(i % 2 ? second : first)).status, 404);
        for (const instance of [first, second]) assert.equal((await unknown(instance)).status, 429);

        await proxy.cut();
        assert.equal((await unknown(first)).status, 404, 'counting failed: the request passes');
        await proxy.restore();
      } finally {
        await second.stop();
        await first.close();
        await proxy.close();
      }
      const refused = await startTestService(sqlite, { env: { REDIS_URL: 'redis://127.0.0.1:1' } }).catch(
        (error: Error) => error,
      );
      assert.ok(refused instanceof Error, 'an unreachable Redis at start stops the start');
    });
  },
);
