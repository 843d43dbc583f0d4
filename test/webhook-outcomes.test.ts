/**
 * Webhook attempts that end together are recorded together (one transaction), each as its own: many
 * events released at once against a receiver that acknowledges some and fails others, a 410 among
 * them. Every event is sent once per attempt, each attempt is in its event's log, the failed ones are
 * retried until acknowledged, and the 410 disables the endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { deliveryLog } from '../src/services/webhooks.ts';
import { disableWebhookEndpoint, findWebhookEndpoint } from '../src/store/webhooks.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { isCheckpointEvent, type Received, startReceiver } from './support/receiver.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

/** Retries due at once (the schedule scaled down) and the workers running every 50 ms, so a failed attempt is retried within the test. */
const ENV = { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.00001', DEADLINE_SWEEP_MS: '50' };
const EVENTS = 40;
const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: wire_money, classification: deny }
`;

const deliveryId = (request: Received) => String(request.headers['x-service-delivery']);

for (const backend of backends) {
  describe(`webhook outcomes recorded together on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend, { env: ENV });
    });
    after(() => t?.close());

    test('events released at once: each sent once per attempt, every attempt logged, failures retried', async () => {
      // First attempts: amounts 0, 3, 6, … fail with 500, 1, 4, 7, … with 503, the rest are
      // acknowledged; every retry is acknowledged (204).
      const firstSeen = new Set<string>();
      const hook = await startReceiver({
        ignore: isCheckpointEvent,
        script: (request) => {
          const id = deliveryId(request);
          if (firstSeen.has(id)) return { status: 204 };
          firstSeen.add(id);
          const n = Number(/amount=(\d+)/.exec(request.body)?.[1]);
          return { status: n % 3 === 0 ? 500 : n % 3 === 1 ? 503 : 200 };
        },
      });
      try {
        const { workspace, key } = await t.workspace({ config: CONFIG });
        await applyConfig(t.service.ctx, workspace, parseConfig(`webhook: { url: "${hook.url}" }\n`));
        const db = t.service.ctx.db;
        // Queued while the endpoint is disabled, then released at once: the attempts end together.
        await disableWebhookEndpoint(db, workspace.id, Date.now());
        for (let n = 0; n < EVENTS; n++) {
          const body = submission({ tool_name: 'wire_money', arguments: { amount: n } });
          const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body });
          assert.equal(answer.status, 201, answer.text);
        }
        await applyConfig(t.service.ctx, workspace, parseConfig(`webhook: { url: "${hook.url}" }\n`));
        const failing = Math.ceil(EVENTS / 3) + Math.ceil((EVENTS - 1) / 3);
        await hook.waitFor(EVENTS + failing, { timeoutMs: 60_000 });
        await until('every event delivered', async () => {
          await t.settled();
          const log = await deliveryLog(t.service.ctx, workspace.id, { limit: EVENTS + 10 });
          return log.filter((e) => e.event === 'hold.rejected').every((e) => e.state === 'delivered')
            ? log
            : undefined;
        });

        const log = (await deliveryLog(t.service.ctx, workspace.id, { limit: EVENTS + 10 })).filter(
          (e) => e.event === 'hold.rejected',
        );
        assert.equal(log.length, EVENTS);
        for (const event of log) {
          const sent = hook.requests.filter((r) => deliveryId(r) === event.id);
          const n = Number(/amount=(\d+)/.exec(sent[0]!.body)?.[1]);
          const statuses = n % 3 === 2 ? [200] : [n % 3 === 0 ? 500 : 503, 204];
          assert.equal(sent.length, statuses.length, `event ${n}: sent once per attempt`);
          assert.deepEqual(
            event.attempts.map((a) => ({ attempt: a.attempt, status: a.status_code })),
            statuses.map((status, i) => ({ attempt: i + 1, status })),
            `event ${n}: each attempt in its own log`,
          );
        }
        assert.equal((await findWebhookEndpoint(db, workspace.id))?.disabledAt, null);
      } finally {
        await hook.close();
      }
    });

    test('a 410 among attempts that end together disables the endpoint; the others are recorded as theirs', async () => {
      const hook = await startReceiver({
        ignore: isCheckpointEvent,
        script: (request) => ({ status: /amount=7\b/.test(request.body) ? 410 : 200 }),
      });
      try {
        const { workspace, key } = await t.workspace({ config: CONFIG });
        await applyConfig(t.service.ctx, workspace, parseConfig(`webhook: { url: "${hook.url}" }\n`));
        const db = t.service.ctx.db;
        await disableWebhookEndpoint(db, workspace.id, Date.now());
        for (let n = 0; n < 10; n++) {
          const body = submission({ tool_name: 'wire_money', arguments: { amount: n } });
          assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key, body })).status, 201);
        }
        await applyConfig(t.service.ctx, workspace, parseConfig(`webhook: { url: "${hook.url}" }\n`));
        await until('the endpoint to be disabled', async () =>
          (await findWebhookEndpoint(db, workspace.id))?.disabledAt ? true : undefined,
        );
        await t.settled();
        const log = (await deliveryLog(t.service.ctx, workspace.id)).filter(
          (e) => e.event === 'hold.rejected',
        );
        const gone = log.filter((e) => e.attempts.some((a) => a.status_code === 410));
        assert.equal(gone.length, 1);
        assert.equal(gone[0]!.state, 'pending', 'the 410 is not an acknowledgement');
        for (const event of log.filter((e) => e !== gone[0])) {
          // Sent before the 410 was recorded (delivered), or still waiting for the endpoint.
          if (event.attempts.length === 0) assert.equal(event.state, 'pending');
          else
            assert.deepEqual([event.state, event.attempts.map((a) => a.status_code)], ['delivered', [200]]);
        }
      } finally {
        await hook.close();
      }
    });
  });
}
