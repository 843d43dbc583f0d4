/**
 * Webhooks end to end (interface.md, Events; decisions.md, Webhooks): the three events with their
 * exact bodies, headers and signatures (checked with our own HMAC and with the `standardwebhooks`
 * library), the outbox written with the state change, retries and dead letters against a real
 * receiver, rotation, the private-address guard, kill -9, and the command line.
 */
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, afterEach, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../src/config.ts';
import { backoffDelay } from '../src/domain/backoff.ts';
import { DELIVERY_RETRIES, MAX_ATTEMPTS } from '../src/domain/webhooks.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { decideHold } from '../src/services/decide-hold.ts';
import { ServiceError } from '../src/services/errors.ts';
import { getHold } from '../src/services/read-hold.ts';
import { deliveryLog, redeliver, rotateWebhookSecret } from '../src/services/webhooks.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import type { Sql } from '../src/store/db.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import { findWebhookEndpoint } from '../src/store/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { type Backend, backends, sqlite, type Storage } from './support/backends.ts';
import { approvals, type Run } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { freePort, startRecordingUpstream } from './support/mcp-upstream.ts';
import { type Received, type Receiver, isCheckpointEvent, startReceiver } from './support/receiver.ts';
import { killServerProcesses, startServerProcess } from './support/server-process.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

/** Small enough that 25 attempts take about two seconds (the schedule itself spans 2.3 days). */
const SCALE = 0.00001;
const ENV = { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: String(SCALE), DEADLINE_SWEEP_MS: '50' };
const HOUR = 3_600_000;

const MEMBERS = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
`;
const POLICY = `tools:
  - { connection: SDK, tool: ship_it, classification: allow }
  - { connection: SDK, tool: wire_money, classification: deny }
  - { connection: SDK, tool: send_invoice, classification: approval }
rules:
  - name: Large payments need two approvers
    tool: "payments.*"
    effect: approval
    approvers: [ admin@acme.test, bob@acme.test ]
    approvals_required: 2
  - name: No crypto
    tool: buy_crypto
    effect: deny
    reason: Crypto is not allowed here
  - name: Quick ones
    tool: quick_thing
    effect: approval
    approvers: [ admin@acme.test ]
    timeout_minutes: 1
`;

// ---------------------------------------------------------------------------------------------
// Helpers

const hmacHex = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

/** What a receiver does with X-Service-Signature: any listed signature matches, in constant time. */
function serviceSignatureValid(secret: string, body: string, header: string): boolean {
  const expected = Buffer.from(hmacHex(secret, body), 'hex');
  return header.split(',').some((candidate) => {
    const given = Buffer.from(candidate.trim(), 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

const headerMap = (received: Received) =>
  Object.fromEntries(Object.entries(received.headers).map(([name, value]) => [name, String(value)]));

/**
 * The headers of one attempt, and its signatures: exactly one per secret (newest first), recomputed
 * here. With `verify`, the stock Standard Webhooks verifier accepts it with every secret too (it also
 * checks the timestamp against the real clock, so not after the test clock moved on).
 */
function checkSigned(received: Received, secrets: string[], verify = true) {
  const { headers, body } = received;
  const parsed = JSON.parse(body);
  assert.equal(received.method, 'POST');
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['x-service-event'], parsed.event);
  const id = headers['x-service-delivery'];
  assert.match(String(id), /^\S{8,}$/);
  assert.equal(headers['webhook-id'], id);
  assert.match(String(headers['x-service-timestamp']), /^\d{10}$/);
  assert.equal(headers['webhook-timestamp'], headers['x-service-timestamp']);
  const timestamp = Number(headers['x-service-timestamp']);

  assert.deepEqual(
    String(headers['x-service-signature']).split(','),
    secrets.map((secret) => hmacHex(secret, body)),
    'X-Service-Signature: hex HMAC-SHA256 of the raw body keyed with the secret string',
  );
  for (const secret of secrets) {
    assert.ok(serviceSignatureValid(secret, body, String(headers['x-service-signature'])));
  }
  assert.deepEqual(
    String(headers['webhook-signature']).split(' '),
    secrets.map((secret) => new Webhook(secret).sign(String(id), new Date(timestamp * 1000), body)),
    'webhook-signature: Standard Webhooks, one v1 signature per secret',
  );
  if (verify) {
    for (const secret of secrets) {
      assert.deepEqual(new Webhook(secret).verify(body, headerMap(received)), parsed);
    }
  }
  return parsed;
}

function checkSecret(secret: unknown): asserts secret is string {
  assert.equal(typeof secret, 'string');
  assert.match(secret as string, /^whsec_[A-Za-z0-9+/]{43}=$/);
  assert.equal(Buffer.from((secret as string).slice(6), 'base64').length, 32);
}

interface EventRow {
  id: string;
  event: string;
  holdId: string;
  state: string;
  attempts: number;
  body: string;
}

/** The hold events stored (the evidence checkpoints a workspace also gets are left out). */
const eventRows = (db: Sql, where: { hold?: string; workspace?: string }) =>
  db.all<EventRow>(
    `SELECT id, event, hold_id AS "holdId", state, attempts, body FROM webhook_events
     WHERE ${where.hold ? 'hold_id' : 'workspace_id'} = $1 AND event <> 'evidence.checkpoint'
     ORDER BY created_at, id`,
    [where.hold ?? where.workspace],
  );

/** The one event of a hold, once it reached `state`. */
const eventReaching = (db: Sql, holdId: string, state: string, timeoutMs = 5000) =>
  until(
    `the event of ${holdId} to be ${state}`,
    async () => {
      const rows = await eventRows(db, { hold: holdId });
      assert.ok(rows.length <= 1, `one event per hold, got ${rows.length}`);
      return rows[0]?.state === state ? rows[0] : undefined;
    },
    timeoutMs,
  );

/**
 * For a service with the real retry schedule (WEBHOOK_RETRY_SCALE 1): moves its clock to each retry
 * of these holds' events as it falls due, until none is pending (each delivered or dead). Returns,
 * per event id, when each retry was due, as stored after attempt 1, 2, ... Real time does not have to
 * pass: a day of retries takes as long as its attempts.
 */
async function retryOnTheClock(t: TestService, holdIds: string[]) {
  const due = new Map<string, number[]>();
  for (;;) {
    await t.settled(); // every attempt begun is finished and recorded
    const rows = await t.service.ctx.db.all<{ id: string; state: string; attempts: number; next: number }>(
      `SELECT id, state, attempts, next_attempt_at AS "next" FROM webhook_events
       WHERE hold_id IN (${holdIds.map((_, i) => `$${i + 1}`).join(', ')})`,
      holdIds,
    );
    assert.equal(rows.length, holdIds.length, 'one event per hold');
    const pending = rows.filter((row) => row.state === 'pending');
    for (const row of pending.filter((row) => row.attempts > 0)) {
      const times = due.get(row.id) ?? [];
      times[row.attempts - 1] = Number(row.next);
      due.set(row.id, times);
    }
    if (pending.length === 0) return due;
    await t.clock.advanceTo(Math.min(...pending.map((row) => Number(row.next))));
  }
}

type Log = Awaited<ReturnType<typeof deliveryLog>>;
const logOf = async (t: TestService, workspaceId: string, eventId: string) =>
  (await deliveryLog(t.service.ctx, workspaceId)).find((entry) => entry.id === eventId)!;

/** The wait after each failed attempt as the service chose it: from the attempt's end to when it set the next due. */
const chosenWaits = (attempts: Log[number]['attempts'], due: number[]) =>
  attempts.slice(0, -1).map((attempt, i) => due[i]! - (Date.parse(attempt.at!) + attempt.duration_ms));

function jsonOut(run: Run): any {
  assert.equal(run.code, 0, `exit code 0 expected; stderr: ${run.stderr}`);
  assert.equal(run.stderr, '');
  const lines = run.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line of JSON expected, got: ${run.stdout}`);
  return JSON.parse(lines[0]!);
}

/** A workspace with members and the policy above, and a webhook to `url`; its secret, shown once. */
async function hookedWorkspace(t: TestService, url: string) {
  const { workspace, key } = await t.workspace({ config: MEMBERS + POLICY });
  const applied = await applyConfig(t.service.ctx, workspace, parseConfig(`webhook: { url: "${url}" }\n`));
  assert.equal(applied.applied, true);
  checkSecret(applied.webhook_secret);
  return { workspace, key, secret: applied.webhook_secret };
}

const submit = async (t: TestService, key: string, overrides: Record<string, unknown>) => {
  const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });
  assert.equal(answer.status, 201, answer.text);
  return answer.body as { id: string; status: string };
};
const record = async (t: TestService, key: string, id: string) =>
  (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body;

/** A denied submission: the quickest way to an event (hold.rejected). */
const denied = (t: TestService, key: string) =>
  submit(t, key, { tool_name: 'wire_money', arguments: { amount: 9 } });

// ---------------------------------------------------------------------------------------------

test('the delivery retries follow the schedule: 5 s doubling, ±20 % jitter, 4 h cap, Retry-After within it', () => {
  const base = (n: number) => Math.min(5000 * 2 ** (n - 1), 4 * HOUR);
  let total = 0;
  for (let n = 1; n < MAX_ATTEMPTS; n++) {
    const low = backoffDelay(DELIVERY_RETRIES, n, { scale: 1, random: 0 });
    const middle = backoffDelay(DELIVERY_RETRIES, n, { scale: 1, random: 0.5 });
    const high = backoffDelay(DELIVERY_RETRIES, n, { scale: 1, random: 1 });
    assert.equal(middle, base(n), `attempt ${n}`);
    assert.equal(low, Math.round(base(n) * 0.8));
    assert.equal(high, Math.round(base(n) * 1.2));
    for (let k = 0; k <= 10; k++) {
      const r = k / 10;
      const d = backoffDelay(DELIVERY_RETRIES, n, { scale: 1, random: r });
      assert.ok(d >= low && d <= high, `attempt ${n}, random ${r}: ${d}`);
    }
    if (n > 1)
      assert.ok(middle >= backoffDelay(DELIVERY_RETRIES, n - 1, { scale: 1, random: 0.5 }), 'never shrinks');
    total += middle;
  }
  assert.equal(backoffDelay(DELIVERY_RETRIES, 1, { scale: 1, random: 0.5 }), 5000);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 2, { scale: 1, random: 0.5 }), 10_000);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 12, { scale: 1, random: 0.5 }), 5000 * 2048);
  assert.equal(
    backoffDelay(DELIVERY_RETRIES, 13, { scale: 1, random: 0.5 }),
    4 * HOUR,
    'capped at 4 h from attempt 13',
  );
  assert.equal(backoffDelay(DELIVERY_RETRIES, 24, { scale: 1, random: 1 }), 4 * HOUR * 1.2);
  // 24 waits between 25 attempts: about 2.3 days (2.24 without jitter).
  assert.ok(total / (24 * HOUR) > 2.2 && total / (24 * HOUR) < 2.3, `${total / (24 * HOUR)} days`);
  // The scale applies to every delay (WEBHOOK_RETRY_SCALE).
  assert.equal(backoffDelay(DELIVERY_RETRIES, 3, { scale: 0.001, random: 0.5 }), 20);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 20, { scale: 0.001, random: 0.5 }), 14_400);
  // Retry-After: honoured when longer than the schedule, never past the longest wait, never shorter.
  assert.equal(backoffDelay(DELIVERY_RETRIES, 1, { scale: 1, random: 0.5, atLeastMs: 60_000 }), 60_000);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 1, { scale: 1, random: 0.5, atLeastMs: 100 * HOUR }), 4 * HOUR);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 5, { scale: 1, random: 0.5, atLeastMs: 1000 }), 80_000);
  assert.equal(backoffDelay(DELIVERY_RETRIES, 1, { scale: 0.001, random: 0.5, atLeastMs: 60_000 }), 60);
});

describe('webhooks', { concurrency: true, timeout: 170_000 }, () => {
  // Storage-independent and slow (the 10 s limit): runs once, beside the rest.
  test('an answer slower than 10 s is a failure; the next attempt delivers', async () => {
    const t = await startTestService(sqlite, { env: ENV });
    const receiver = await startReceiver({ ignore: isCheckpointEvent });
    try {
      const { key, workspace, secret } = await hookedWorkspace(t, receiver.url);
      // The answer comes long after the limit, so a busy machine's late timers cannot blur the two.
      receiver.queue({ status: 200, delayMs: 30_000 });
      const hold = await denied(t, key);
      const [first, second] = await receiver.waitFor(2, { timeoutMs: 20_000 });
      // The limit is measured where it runs, in the service (duration_ms, below): its 10 s start when
      // it sends, before the receiver has the body, so the gap between arrivals can be shorter on a
      // busy machine. The receiver only shows that the next attempt did not wait for the answer.
      assert.ok(second!.at - first!.at < 30_000, 'did not wait for the slow answer');
      const row = await eventReaching(t.service.ctx.db, hold.id, 'delivered');
      const log = await logOf(t, workspace.id, row.id);
      assert.equal(log.attempts.length, 2);
      assert.equal(log.attempts[0]!.status_code, null);
      assert.match(log.attempts[0]!.error!, /timed out/);
      // At least the limit; well under the answer's 30 s (a loaded CI machine once took over 11 s).
      assert.ok(log.attempts[0]!.duration_ms >= 9_900 && log.attempts[0]!.duration_ms < 20_000);
      assert.equal(log.attempts[1]!.status_code, 200);
      assert.equal(first!.headers['x-service-delivery'], second!.headers['x-service-delivery']);
      checkSigned(second!, [secret]);
    } finally {
      await receiver.close();
      await t.close();
    }
  });

  test('an IPv4-mapped IPv6 literal of a loopback address is refused like the address itself', async () => {
    const t = await startTestService(sqlite, { env: { ...ENV, ALLOW_PRIVATE_TARGETS: 'false' } });
    const hook = await startReceiver({ ignore: isCheckpointEvent });
    try {
      const { workspace, key } = await t.workspace({ config: MEMBERS + POLICY });
      const url = `http://[::ffff:127.0.0.1]:${hook.port}/hook`;
      const applied = await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(`webhook: { url: "${url}" }\n`),
      ).then(
        () => 'accepted',
        (error: ServiceError) => error.issues[0]?.field,
      );
      if (applied === 'accepted') await denied(t, key);
      // The webhook worker has had a round since, and finished any attempt it made.
      await t.settled();
      assert.equal(hook.requests.length, 0, 'the receiver on 127.0.0.1 got a request');
      assert.equal(applied, 'webhook.url', 'apply accepted a loopback webhook URL');
    } finally {
      await hook.close();
      await t.close();
    }
  });

  test('a hanging receiver of one workspace does not hold up the deliveries of another', async () => {
    const t = await startTestService(sqlite, { env: ENV });
    const slow = await startReceiver({ script: { hang: true }, ignore: isCheckpointEvent });
    const fast = await startReceiver({ ignore: isCheckpointEvent });
    try {
      const a = await hookedWorkspace(t, slow.url);
      const b = await hookedWorkspace(t, fast.url);
      for (let i = 0; i < 3; i++) await denied(t, a.key);
      await slow.waitFor(3);
      const started = Date.now();
      await denied(t, b.key);
      await fast.waitFor(1, { timeoutMs: 15_000 });
      const waited = Date.now() - started;
      assert.ok(waited < 2000, `workspace B waited ${waited} ms for workspace A's receiver`);
    } finally {
      await slow.close();
      await fast.close();
      await t.close();
    }
  });

  describe('per storage', { concurrency: false }, () => {
    for (const backend of backends) suite(backend);
  });
});

function suite(backend: Backend) {
  describe(`webhooks on ${backend.name}`, { skip: backend.skip, concurrency: false }, () => {
    let t: TestService;
    const receivers: Receiver[] = [];
    const receiver = async (options?: Parameters<typeof startReceiver>[0]) => {
      const started = await startReceiver({ ignore: isCheckpointEvent, ...options });
      receivers.push(started);
      return started;
    };
    before(async () => {
      t = await startTestService(backend, { env: ENV });
    });
    afterEach(async () => {
      await Promise.all(receivers.splice(0).map((r) => r.close()));
    });
    after(() => t?.close());

    test('hold.approved after the last approval of a four-eyes hold: one event, exact body, signed', async () => {
      const hook = await receiver();
      const { workspace, key, secret } = await hookedWorkspace(t, hook.url);
      const hold = await submit(t, key, {
        tool_name: 'payments.transfer',
        arguments: { amount: 5000, currency: 'EUR' },
        agent_identity: { id: 'agent-7', label: 'Billing bot' },
      });
      assert.equal(hold.status, 'pending');
      assert.equal((await decideAs(t, workspace.id, hold.id, 'approve')).hold.status, 'pending');
      await t.settled();
      assert.deepEqual(await eventRows(t.service.ctx.db, { hold: hold.id }), [], 'no event while pending');
      assert.equal(hook.requests.length, 0);

      const before = Date.now();
      const decided = await decideAs(t, workspace.id, hold.id, 'approve', 'bob@acme.test');
      assert.equal(decided.hold.status, 'approved');
      const [delivery] = await hook.waitFor(1);
      const body = checkSigned(delivery!, [secret]);
      const stored = await record(t, key, hold.id);
      assert.deepEqual(Object.keys(body), ['event', 'created_at', 'id', 'data']);
      assert.deepEqual(body, {
        event: 'hold.approved',
        created_at: body.created_at,
        id: hold.id,
        data: {
          status: 'approved',
          tool_name: 'payments.transfer',
          summary: 'payments.transfer(amount=5000, currency="EUR")',
          agent: { id: 'agent-7' },
          connection: 'SDK',
          decided_at: stored.decision.decided_at,
          decision: { verdict: 'approve', reason: null, channel: 'inbox' },
        },
      });
      assert.ok(Math.abs(Date.parse(body.created_at) - before) < 5000);
      assert.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const row = await eventReaching(t.service.ctx.db, hold.id, 'delivered');
      assert.equal(row.event, 'hold.approved');
      assert.equal(delivery!.headers['x-service-delivery'], row.id);
      assert.equal(delivery!.body, row.body, 'the stored body is sent byte for byte');
      // Deciding again changes nothing and sends nothing.
      assert.equal((await decideAs(t, workspace.id, hold.id, 'reject', 'admin@acme.test')).outcome, 'closed');
      await t.settled();
      assert.equal(hook.requests.length, 1, 'exactly one event for the hold');
      assert.equal((await eventRows(t.service.ctx.db, { hold: hold.id })).length, 1);
    });

    test('hold.rejected: by a human (with the comment) and by a deny rule at submission', async () => {
      const hook = await receiver();
      const { workspace, key, secret } = await hookedWorkspace(t, hook.url);

      // Four-eyes, one approval then a rejection: final at once, one event.
      const human = await submit(t, key, { tool_name: 'payments.refund', arguments: { amount: 70 } });
      await decideAs(t, workspace.id, human.id, 'approve', 'bob@acme.test');
      await decideAs(t, workspace.id, human.id, 'reject', 'admin@acme.test', 'Not this month');
      const rule = await submit(t, key, { tool_name: 'buy_crypto', arguments: { coin: 'BTC' } });
      assert.equal(rule.status, 'denied');
      const classified = await denied(t, key);
      assert.equal(classified.status, 'denied');

      const received = await hook.waitFor(3);
      await t.settled();
      assert.equal(hook.requests.length, 3);
      const byId = new Map(received.map((r) => [JSON.parse(r.body).id as string, checkSigned(r, [secret])]));
      const expect = async (
        id: string,
        tool: string,
        summary: string,
        reason: string | null,
        channel: string,
      ) => {
        const stored = await record(t, key, id);
        assert.equal(stored.status, 'rejected');
        const body = byId.get(id);
        assert.deepEqual(body, {
          event: 'hold.rejected',
          created_at: body.created_at,
          id,
          data: {
            status: 'rejected',
            tool_name: tool,
            summary,
            agent: { id: 'agent-7' },
            connection: 'SDK',
            decided_at: stored.decision.decided_at,
            decision: { verdict: 'reject', reason, channel },
          },
        });
      };
      await expect(human.id, 'payments.refund', 'payments.refund(amount=70)', 'Not this month', 'inbox');
      await expect(rule.id, 'buy_crypto', 'buy_crypto(coin="BTC")', 'Crypto is not allowed here', 'rule');
      // A tool classified deny acts as a rule; its default reason names it.
      const byClassification = (await record(t, key, classified.id)).decision.reason as string;
      assert.match(byClassification, /^Denied by rule: /);
      await expect(classified.id, 'wire_money', 'wire_money(amount=9)', byClassification, 'rule');
    });

    test('hold.expired: status expired, decided_at and decision null, expired_at', async () => {
      const hook = await receiver();
      const { key, secret } = await hookedWorkspace(t, hook.url);
      const hold = await submit(t, key, { tool_name: 'quick_thing', arguments: { n: 1 } });
      assert.equal(hold.status, 'pending');
      const pending = await record(t, key, hold.id);
      t.clock.advance(61_000);
      const [delivery] = await hook.waitFor(1);
      const body = checkSigned(delivery!, [secret]);
      const stored = await record(t, key, hold.id);
      assert.equal(stored.status, 'expired');
      assert.deepEqual(body, {
        event: 'hold.expired',
        created_at: body.created_at,
        id: hold.id,
        data: {
          status: 'expired',
          tool_name: 'quick_thing',
          summary: 'quick_thing(n=1)',
          agent: { id: 'agent-7' },
          connection: 'SDK',
          decided_at: null,
          decision: null,
          expired_at: pending.expires_at,
        },
      });
      assert.ok(Date.parse(body.created_at) >= Date.parse(pending.expires_at));
    });

    test('no event for auto-allowed or pending holds, nor for the result of an MCP execution', async () => {
      const hook = await receiver();
      const upstream = await startRecordingUpstream();
      const client = new Client({ name: 'webhook-test', version: '1' });
      try {
        const { workspace, key, secret } = await hookedWorkspace(t, hook.url);
        await applyConfig(
          t.service.ctx,
          workspace,
          parseConfig(
            `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n` +
              'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n',
          ),
        );
        assert.equal((await submit(t, key, { tool_name: 'ship_it' })).status, 'allowed');
        assert.equal((await submit(t, key, { tool_name: 'send_invoice' })).status, 'pending');

        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
            requestInit: { headers: { Authorization: `Bearer ${key}` } },
          }),
        );
        await client.listTools();
        const held = (await client.callTool({ name: 'record', arguments: { text: 'hi' } })) as {
          content: { text: string }[];
        };
        const reference = JSON.parse(held.content[1]!.text).service.reference as string;
        await t.settled();
        assert.deepEqual(await eventRows(t.service.ctx.db, { workspace: workspace.id }), []);
        assert.equal(hook.requests.length, 0);

        await decideAs(t, workspace.id, reference, 'approve');
        await until('the approved call to run', async () => {
          const hold = await getHold(t.service.ctx, workspace.id, reference);
          return hold.status === 'executed' || hold.execution?.status === 'executed' ? hold : undefined;
        });
        assert.deepEqual(upstream.calls, [{ name: 'record', arguments: { text: 'hi' } }]);
        const [delivery] = await hook.waitFor(1);
        // Any event of the execution is written with its result; the workers have sent what was due.
        await t.settled();
        const body = checkSigned(delivery!, [secret]);
        assert.equal(body.event, 'hold.approved');
        assert.equal(body.id, reference);
        assert.equal(body.data.status, 'approved');
        assert.equal(body.data.connection, 'Recorder');
        assert.equal(hook.requests.length, 1, 'nothing after the execution');
        const rows = await eventRows(t.service.ctx.db, { workspace: workspace.id });
        assert.deepEqual(
          rows.map((r) => [r.holdId, r.event]),
          [[reference, 'hold.approved']],
        );
      } finally {
        await client.close().catch(() => {});
        await upstream.close();
      }
    });

    test('the event is stored with the state change; nothing without an endpoint; webhook: null removes it', async () => {
      const hook = await receiver({ script: { status: 503 } });
      const { workspace, key } = await hookedWorkspace(t, hook.url);
      const db = t.service.ctx.db;

      const rule = await denied(t, key);
      assert.deepEqual(
        (await eventRows(db, { hold: rule.id })).map((r) => r.event),
        ['hold.rejected'],
        'in webhook_events when the 201 arrives',
      );
      const pending = await submit(t, key, { tool_name: 'send_invoice' });
      const decided = await decideAs(t, workspace.id, pending.id, 'approve');
      assert.equal(decided.hold.status, 'approved');
      assert.deepEqual(
        (await eventRows(db, { hold: pending.id })).map((r) => r.event),
        ['hold.approved'],
        'in webhook_events when the decision returns',
      );

      // A workspace without an endpoint: no rows at all, whatever happens to its holds.
      const plain = await t.workspace({ config: MEMBERS + POLICY });
      await denied(t, plain.key);
      const other = await submit(t, plain.key, { tool_name: 'send_invoice' });
      await decideAs(t, plain.workspace.id, other.id, 'reject');
      await submit(t, plain.key, { tool_name: 'ship_it' });
      assert.deepEqual(await eventRows(db, { workspace: plain.workspace.id }), []);

      // `webhook: null` removes the endpoint; later changes write nothing.
      const removed = await applyConfig(t.service.ctx, workspace, parseConfig('webhook: null\n'));
      assert.deepEqual(
        { ...removed, version: undefined },
        { applied: true, version: undefined, items_changed: ['webhook'] },
      );
      assert.equal(await findWebhookEndpoint(db, workspace.id), undefined);
      const after = await denied(t, key);
      assert.deepEqual(await eventRows(db, { hold: after.id }), []);
      assert.equal((await eventRows(db, { workspace: workspace.id })).length, 2);
      // Declared again: a new endpoint with a new secret.
      const again = await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(`webhook: { url: "${hook.url}" }`),
      );
      checkSecret(again.webhook_secret);
    });

    test('500 then 200: delivered on the 2nd attempt; one delivery id, a timestamp per attempt; the log', async () => {
      const hook = await receiver();
      hook.queue({ status: 500, body: 'oops' });
      const { workspace, key, secret } = await hookedWorkspace(t, hook.url);
      const one = await denied(t, key);
      const [first, second] = await hook.waitFor(2);
      const row = await eventReaching(t.service.ctx.db, one.id, 'delivered');
      for (const attempt of [first!, second!]) {
        checkSigned(attempt, [secret]);
        assert.equal(attempt.headers['x-service-delivery'], row.id);
        assert.equal(attempt.body, first!.body);
      }
      const log = await logOf(t, workspace.id, row.id);
      assert.equal(log.state, 'delivered');
      assert.equal(log.hold, one.id);
      assert.equal(log.event, 'hold.rejected');
      assert.ok(log.delivered_at);
      assert.equal(log.next_attempt_at, null);
      assert.deepEqual(
        log.attempts.map(({ attempt, status_code, error }) => ({ attempt, status_code, error })),
        [
          { attempt: 1, status_code: 500, error: null },
          { attempt: 2, status_code: 200, error: null },
        ],
      );
      for (const [i, attempt] of log.attempts.entries()) {
        assert.ok(
          Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0 && attempt.duration_ms < 5000,
        );
        assert.equal(
          [first, second][i]!.headers['x-service-timestamp'],
          String(Math.floor(Date.parse(attempt.at!) / 1000)),
          'X-Service-Timestamp is the time of that attempt',
        );
      }
      assert.ok(Date.parse(log.attempts[1]!.at!) >= Date.parse(log.attempts[0]!.at!));

      // Another event: another delivery id.
      const two = await denied(t, key);
      const [third] = await hook.waitFor(1, { filter: (r) => JSON.parse(r.body).id === two.id });
      assert.notEqual(third!.headers['x-service-delivery'], row.id);
      assert.equal((await eventReaching(t.service.ctx.db, two.id, 'delivered')).attempts, 1);
    });

    test('only 2xx acknowledges: 201 and 204 do; 304, 4xx and 5xx do not', async () => {
      const hook = await receiver();
      const statuses = [400, 401, 404, 304, 429, 500, 503, 201];
      hook.queue(...statuses.map((status) => ({ status })));
      const { workspace, key, secret } = await hookedWorkspace(t, hook.url);
      const one = await denied(t, key);
      const row = await eventReaching(t.service.ctx.db, one.id, 'delivered');
      assert.equal(hook.requests.length, statuses.length);
      const log = await logOf(t, workspace.id, row.id);
      assert.deepEqual(
        log.attempts.map((a) => a.status_code),
        statuses,
      );
      hook.queue({ status: 204 });
      const two = await denied(t, key);
      assert.equal((await eventReaching(t.service.ctx.db, two.id, 'delivered')).attempts, 1);
      hook.queue({ status: 202 });
      const three = await denied(t, key);
      assert.equal((await eventReaching(t.service.ctx.db, three.id, 'delivered')).attempts, 1);
      assert.equal(hook.requests.length, statuses.length + 2);
      for (const r of hook.requests) checkSigned(r, [secret]);
    });

    test('redirects are not followed and count as failures', async () => {
      const hook = await receiver();
      const { workspace, key } = await hookedWorkspace(t, hook.url);
      const elsewhere = `${hook.origin}/moved`;
      hook.queue(
        { status: 301, redirectTo: elsewhere },
        { status: 302, redirectTo: elsewhere },
        { status: 307, redirectTo: elsewhere },
        { status: 308, redirectTo: elsewhere },
      );
      const one = await denied(t, key);
      const row = await eventReaching(t.service.ctx.db, one.id, 'delivered');
      assert.deepEqual(
        hook.requests.map((r) => r.url),
        ['/hook', '/hook', '/hook', '/hook', '/hook'],
        'nothing was sent to the redirect target',
      );
      const log = await logOf(t, workspace.id, row.id);
      assert.deepEqual(
        log.attempts.map((a) => a.status_code),
        [301, 302, 307, 308, 200],
      );
    });

    test("Retry-After is respected, but never past the schedule's longest wait", async () => {
      // The real schedule, on a clock moved to each retry: hours of waiting take no time.
      const own = await startTestService(backend, { env: { ...ENV, WEBHOOK_RETRY_SCALE: '1' } });
      const hook = await receiver();
      try {
        const { workspace, key } = await hookedWorkspace(own, hook.url);
        hook.queue(
          // 10,000 s: longer than the schedule's first wait (5 s), shorter than its longest (4 h).
          { status: 503, retryAfter: 10_000 },
          // 100,000 s is past 4 h: 4 h.
          { status: 429, retryAfter: 100_000 },
          // An HTTP date 12,000 s ahead (of the real time the sender reads it by): about 12,000 s.
          { status: 503, retryAfter: new Date(Date.now() + 12_000_000).toUTCString() },
        );
        const one = await denied(own, key);
        const due = await retryOnTheClock(own, [one.id]);
        const row = await eventReaching(own.service.ctx.db, one.id, 'delivered');
        const log = await logOf(own, workspace.id, row.id);
        assert.deepEqual(
          log.attempts.map((a) => a.status_code),
          [503, 429, 503, 200],
        );
        const [first, second, third] = chosenWaits(log.attempts, due.get(row.id)!);
        assert.equal(first, 10_000_000, 'Retry-After 10000');
        assert.equal(second, 4 * HOUR, 'Retry-After past the cap');
        // The date has whole seconds, and a little real time passes before it is read.
        assert.ok(third! > 11_990_000 && third! <= 12_000_000, `Retry-After as a date: ${third} ms`);
      } finally {
        await own.close();
      }
    });

    test('410 disables the endpoint; declaring the webhook again re-enables it and pending events go out', async () => {
      const hook = await receiver();
      const { workspace, key, secret } = await hookedWorkspace(t, hook.url);
      const db = t.service.ctx.db;
      hook.queue({ status: 410 });
      const one = await denied(t, key);
      await hook.waitFor(1);
      await until('the endpoint to be disabled', async () =>
        (await findWebhookEndpoint(db, workspace.id))?.disabledAt ? true : undefined,
      );
      const two = await denied(t, key);
      // A round of the webhook worker after the new event, with everything it started finished.
      await t.settled();
      assert.equal(hook.requests.length, 1, 'no attempt while disabled');
      assert.equal((await eventRows(db, { hold: one.id }))[0]!.state, 'pending');
      assert.equal((await eventRows(db, { hold: two.id }))[0]!.attempts, 0);

      const again = await applyConfig(
        t.service.ctx,
        workspace,
        parseConfig(`webhook: { url: "${hook.url}" }`),
      );
      assert.deepEqual(
        { ...again, version: undefined },
        { applied: true, version: undefined, items_changed: ['webhook'] },
        'the secret stays; none is shown',
      );
      assert.equal((await findWebhookEndpoint(db, workspace.id))?.disabledAt, null);
      await eventReaching(db, one.id, 'delivered');
      await eventReaching(db, two.id, 'delivered');
      assert.equal(hook.requests.length, 3);
      for (const r of hook.requests) checkSigned(r, [secret]);
      const log = await logOf(t, workspace.id, (await eventRows(db, { hold: one.id }))[0]!.id);
      assert.deepEqual(
        log.attempts.map((a) => a.status_code),
        [410, 200],
      );
    });

    test('a huge or endless answer body neither hangs the attempt nor piles up in memory', async () => {
      const hook = await receiver();
      const { workspace, key } = await hookedWorkspace(t, hook.url);
      const GiB = 1024 ** 3;
      hook.queue({ status: 500, hugeBody: GiB }, { status: 200, hugeBody: GiB });
      const rss = process.memoryUsage().rss;
      const started = Date.now();
      const one = await denied(t, key);
      const row = await eventReaching(t.service.ctx.db, one.id, 'delivered');
      assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
      const log = await logOf(t, workspace.id, row.id);
      assert.deepEqual(
        log.attempts.map((a) => a.status_code),
        [500, 200],
      );
      for (const a of log.attempts) assert.ok(a.duration_ms < 3000, `an attempt took ${a.duration_ms} ms`);
      // Counted once the receiver has seen each client go (the count only grows until then).
      await hook.hugeBodiesEnded();
      for (const [index, written] of hook.hugeBytesWritten) {
        assert.ok(
          written < 64 * 1024 ** 2,
          `request ${index}: ${written} bytes written before the client left`,
        );
      }
      const grown = process.memoryUsage().rss - rss;
      assert.ok(grown < 200 * 1024 ** 2, `rss grew by ${grown} bytes`);
    });

    test('the 25th failure dead-letters; redeliver (service, CLI by id, CLI --all-dead); CLI deliveries', async (tc) => {
      // The real schedule (2.3 days), on a clock moved to each retry as it falls due.
      const own = await startTestService(backend, { env: { ...ENV, WEBHOOK_RETRY_SCALE: '1' } });
      tc.after(() => own.close());
      const hook = await receiver({ script: { status: 500 } });
      const { workspace, key, secret } = await hookedWorkspace(own, hook.url);
      const db = own.service.ctx.db;
      const holds = [
        await denied(own, key),
        await denied(own, key),
        await denied(own, key),
        await denied(own, key),
      ];
      const due = await retryOnTheClock(
        own,
        holds.map((hold) => hold.id),
      );
      const rows = [];
      for (const hold of holds) rows.push(await eventReaching(db, hold.id, 'dead'));
      // Dead is final: nothing claims it again (and retryOnTheClock saw every attempt finish).
      for (const row of rows) {
        assert.equal(row.attempts, MAX_ATTEMPTS);
        assert.equal(hook.deliveriesOf(row.id).length, 25, 'exactly 25 attempts');
      }
      const log = await logOf(own, workspace.id, rows[0]!.id);
      assert.equal(log.state, 'dead');
      assert.equal(log.next_attempt_at, null);
      assert.deepEqual(
        log.attempts.map((a) => a.attempt),
        Array.from({ length: 25 }, (_, i) => i + 1),
      );
      assert.ok(log.attempts.every((a) => a.status_code === 500));
      // Each wait is the schedule's, jitter included: 5 s doubling, 4 h from the 13th, ±20 %.
      for (const row of rows) {
        const waits = chosenWaits((await logOf(own, workspace.id, row.id)).attempts, due.get(row.id)!);
        assert.equal(waits.length, 24);
        for (const [i, wait] of waits.entries()) {
          const least = backoffDelay(DELIVERY_RETRIES, i + 1, { scale: 1, random: 0 });
          const most = backoffDelay(DELIVERY_RETRIES, i + 1, { scale: 1, random: 1 });
          assert.ok(wait >= least && wait <= most, `wait after attempt ${i + 1}: ${wait} ms`);
        }
      }

      hook.script({ status: 200 });
      // One event by id, through the service.
      assert.deepEqual(await redeliver(own.service.ctx, workspace.id, [rows[0]!.id]), { requeued: 1 });
      await eventReaching(db, holds[0]!.id, 'delivered');
      assert.equal(hook.deliveriesOf(rows[0]!.id).length, 26);
      // (Not by the stock verifier: the clock has moved days past the real time it checks against.)
      checkSigned(hook.deliveriesOf(rows[0]!.id).at(-1)!, [secret], false);
      const relog = await logOf(own, workspace.id, rows[0]!.id);
      assert.equal(relog.attempts.length, 26, 'the log keeps both rounds');
      assert.equal(relog.attempts.at(-1)!.status_code, 200);
      // Another workspace cannot requeue it.
      const stranger = await own.workspace();
      assert.deepEqual(await redeliver(own.service.ctx, stranger.workspace.id, [rows[1]!.id]), {
        requeued: 0,
      });

      // One by id, then all dead ones, through the command line.
      const slug = workspace.slug;
      assert.deepEqual(
        jsonOut(
          await approvals(own.storage, ['webhook', 'redeliver', '--workspace', slug, rows[1]!.id, '--json']),
        ),
        { requeued: 1 },
      );
      await eventReaching(db, holds[1]!.id, 'delivered');
      assert.deepEqual(
        jsonOut(
          await approvals(own.storage, ['webhook', 'redeliver', '--workspace', slug, '--all-dead', '--json']),
        ),
        { requeued: 2 },
      );
      await eventReaching(db, holds[2]!.id, 'delivered');
      await eventReaching(db, holds[3]!.id, 'delivered');
      assert.deepEqual(await redeliver(own.service.ctx, workspace.id, 'all-dead'), { requeued: 0 });
      for (const row of rows) assert.equal(hook.deliveriesOf(row.id).length, 26);

      const listed = jsonOut(
        await approvals(own.storage, ['webhook', 'deliveries', '--workspace', slug, '--json']),
      );
      assert.deepEqual(Object.keys(listed), ['deliveries']);
      listed.deliveries = listed.deliveries.filter((d: any) => d.event !== 'evidence.checkpoint');
      assert.deepEqual(listed.deliveries.map((d: any) => d.id).sort(), rows.map((r) => r.id).sort());
      for (const d of listed.deliveries) {
        assert.equal(d.event, 'hold.rejected');
        assert.equal(d.state, 'delivered');
        assert.ok(holds.some((h) => h.id === d.hold));
        assert.equal(d.attempts.length, 26);
        assert.deepEqual(Object.keys(d.attempts[0]).sort(), [
          'at',
          'attempt',
          'duration_ms',
          'error',
          'status_code',
        ]);
        assert.equal(d.attempts[0].status_code, 500);
        assert.equal(d.attempts[25].status_code, 200);
      }
      const dead = jsonOut(
        await approvals(own.storage, [
          'webhook',
          'deliveries',
          '--workspace',
          slug,
          '--state',
          'dead',
          '--json',
        ]),
      );
      assert.deepEqual(dead, { deliveries: [] });
    });

    test('rotation: old and new secret both sign for 24 h, then only the new one', async () => {
      const own = await startTestService(backend, { env: ENV });
      const hook = await receiver();
      try {
        const { workspace, key, secret: first } = await hookedWorkspace(own, hook.url);
        await denied(own, key);
        checkSigned((await hook.waitFor(1))[0]!, [first]);

        const { secret: second } = await rotateWebhookSecret(own.service.ctx, workspace.id);
        checkSecret(second);
        assert.notEqual(second, first);
        await denied(own, key);
        const during = (await hook.waitFor(2))[1]!;
        checkSigned(during, [second, first]);
        assert.equal(String(during.headers['x-service-signature']).split(',').length, 2);
        assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2);
        // A receiver that knows only one of them accepts it either way.
        for (const secret of [first, second]) {
          assert.ok(
            serviceSignatureValid(secret, during.body, String(during.headers['x-service-signature'])),
          );
          new Webhook(secret).verify(during.body, headerMap(during));
        }

        // Rotating again (through the command line): the newest and the one before it sign.
        const rotated = jsonOut(
          await approvals(own.storage, ['webhook', 'rotate', '--workspace', workspace.slug, '--json']),
        );
        checkSecret(rotated.secret);
        const third = rotated.secret as string;
        await denied(own, key);
        checkSigned((await hook.waitFor(3))[2]!, [third, second]);

        // Past the 30 s claims too: every attempt is recorded first, or one would be sent again.
        await own.settled();
        await own.clock.advance(24 * HOUR + 1000);
        await denied(own, key);
        const later = (await hook.waitFor(4))[3]!;
        checkSigned(later, [third], false);
        for (const old of [first, second]) {
          assert.ok(!serviceSignatureValid(old, later.body, String(later.headers['x-service-signature'])));
        }
        const entries = await own.service.ctx.db.all<{ type: string }>(
          `SELECT type FROM evidence WHERE workspace_id = $1 AND type = 'webhook.secret_rotated'`,
          [workspace.id],
        );
        assert.equal(entries.length, 2, 'each rotation is in the evidence');
      } finally {
        await own.close();
      }
    });

    test('safety: loopback webhook URLs are refused at apply and at connect time without ALLOW_PRIVATE_TARGETS', async () => {
      const hook = await receiver();
      const storage = await backend.create();
      const open = await startTestService(backend, { storage, env: ENV });
      let closed: TestService | undefined;
      try {
        // Configured while private targets were allowed …
        const literal = await hookedWorkspace(open, hook.url);
        const named = await hookedWorkspace(open, `http://localhost:${hook.port}/hook`);
        await open.stop();
        // … then delivered by a service on the same storage that does not allow them.
        closed = await startTestService(backend, {
          storage,
          env: { ...ENV, ALLOW_PRIVATE_TARGETS: 'false' },
        });
        const db = closed.service.ctx.db;
        for (const { workspace, key } of [literal, named]) {
          const hold = await denied(closed, key);
          const row = await until('an attempt', async () => {
            const [found] = await eventRows(db, { hold: hold.id });
            return found && found.attempts >= 2 ? found : undefined;
          });
          const log = await logOf(closed, workspace.id, row.id);
          for (const attempt of log.attempts) {
            assert.equal(attempt.status_code, null);
            assert.equal(attempt.error, 'internal address refused');
          }
        }
        assert.equal(hook.requests.length, 0, 'the receiver got nothing');

        // And at apply: a field error, nothing stored.
        const { workspace } = await closed.workspace({ config: MEMBERS });
        for (const url of [
          hook.url,
          `http://localhost:${hook.port}/hook`,
          `http://[::1]:${hook.port}/hook`,
        ]) {
          await assert.rejects(
            applyConfig(closed.service.ctx, workspace, parseConfig(`webhook: { url: "${url}" }\n`)),
            (error: unknown) => {
              assert.ok(error instanceof ServiceError, String(error));
              assert.equal(error.code, 'validation_failed');
              assert.equal(error.issues.length, 1);
              assert.equal(error.issues[0]!.field, 'webhook.url');
              assert.equal(error.issues[0]!.line, 1);
              assert.match(error.issues[0]!.message, /internal address/);
              return true;
            },
          );
        }
        assert.equal(await findWebhookEndpoint(db, workspace.id), undefined);
      } finally {
        await open.stop();
        await closed?.stop();
        await storage.drop();
      }
    });

    test('kill -9 while deliveries are pending: every event arrives at least once', async (tc) => {
      const storage = await backend.create();
      const port = await freePort();
      const hook = await receiver({ port, listening: false });
      const config = loadConfig({
        DATA_DIR: storage.env.DATA_DIR,
        DATABASE_URL: storage.env.DATABASE_URL ?? '',
        PORT: '0',
        LOG_LEVEL: 'silent',
        ALLOW_PRIVATE_TARGETS: 'true',
      });
      const ctx = await openContext(config);
      try {
        const workspace: Workspace = await createWorkspace(ctx, {
          slug: `kill-${Date.now().toString(36)}`,
          name: 'Acme',
        });
        await applyConfig(
          ctx,
          workspace,
          parseConfig(`${MEMBERS}${POLICY}webhook: { url: "${hook.url}" }\n`),
        );
        const { key } = await createApiKey(ctx, { workspace, env: 'live' });
        const admin = (await findMemberByEmail(ctx.db, workspace.id, 'admin@acme.test'))!;

        const server = await startServer(storage);
        const submitted: string[] = [];
        const post = async (tool: string) => {
          const answer = await call(server.url, 'POST', '/api/v1/holds', {
            key,
            body: submission({ tool_name: tool }),
          });
          assert.equal(answer.status, 201, answer.text);
          submitted.push(answer.body.id);
          return answer.body.id as string;
        };
        for (let i = 0; i < 4; i++) await post('wire_money');
        await post('ship_it');
        for (let i = 0; i < 4; i++) {
          const id = await post('send_invoice');
          await decideHold(ctx, {
            workspaceId: workspace.id,
            holdId: id,
            memberId: admin.id,
            verdict: i % 2 ? 'reject' : 'approve',
            channel: 'inbox',
          });
        }
        const events = await eventRows(ctx.db, { workspace: workspace.id });
        assert.equal(events.length, 8, 'one event per decided hold, none for the allowed one');
        // Let the worker fail a few times against the closed port, then kill it mid-schedule, between
        // two attempts. (Killed inside an attempt, that event would keep its 30 s claim: still
        // delivered after the restart, only 30 s later than this test wants to wait.)
        await until(
          'a pause between failed attempts',
          async () => {
            const rows = await ctx.db.all<{ attempts: number; next: number; claimed: number | null }>(
              `SELECT attempts, next_attempt_at AS "next", claimed_until AS "claimed" FROM webhook_events
               WHERE workspace_id = $1`,
              [workspace.id],
            );
            const soon = Date.now() + 150;
            const quiet = rows.every((r) => r.attempts >= 2 && r.claimed === null && Number(r.next) > soon);
            return quiet ? true : undefined;
          },
          15_000,
        );
        server.child.kill('SIGKILL');
        assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' });
        assert.equal(hook.requests.length, 0);

        await hook.start();
        const restarted = await startServer(storage);
        const started = Date.now();
        // An attempt cut off by the kill keeps its claim (30 s) before another instance retries it.
        await until(
          'every event delivered',
          async () => {
            const rows = await eventRows(ctx.db, { workspace: workspace.id });
            return rows.every((r) => r.state === 'delivered') ? rows : undefined;
          },
          45_000,
        );
        tc.diagnostic(`all delivered ${Date.now() - started} ms after the restart`);
        const received = new Set(hook.requests.map((r) => String(r.headers['x-service-delivery'])));
        assert.deepEqual([...received].sort(), events.map((e) => e.id).sort(), 'none lost, none invented');
        const holdsReceived = new Set(hook.requests.map((r) => JSON.parse(r.body).id as string));
        assert.equal(holdsReceived.size, 8);
        restarted.child.kill('SIGTERM');
        assert.equal((await restarted.exited).code, 0);
      } finally {
        await killServerProcesses();
        await ctx.db.close();
        await storage.drop();
      }
    });
  });
}

/** `node src/main.ts` on the storage; 50 ms, 100 ms, 200 ms, … between attempts: long enough to kill
 * the server between two of them. */
const startServer = (storage: Storage) =>
  startServerProcess(storage, { ...ENV, WEBHOOK_RETRY_SCALE: '0.01' });
