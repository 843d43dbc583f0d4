/**
 * The SDK (packages/sdk) against the real service, on each storage backend: every result a hold can
 * have, expiry, rate limits, retries that make no duplicate, aborts, webhook signatures, and the
 * evidence export checked offline.
 */
import assert from 'node:assert/strict';
import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ApprovalsApiError,
  ApprovalsClient,
  type EvidenceVerification,
  verifyEvidenceExport,
  verifyWebhookSignature,
  type WebhookEvent,
} from '../packages/sdk/src/index.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends, postgres } from './support/backends.ts';
import { approvals } from './support/cli.ts';
import { call } from './support/http.ts';
import { isCheckpointEvent, startReceiver } from './support/receiver.ts';
import {
  decideAs,
  startTestService,
  startTestServiceOnCuttablePostgres,
  type TestService,
} from './support/service.ts';
import { until } from './support/wait.ts';
import { SDK_POLICY } from './support/sdk-policy.ts';

let sequence = 0;
const request = (tool_name: string, extra: Record<string, unknown> = {}) => ({
  tool_name,
  arguments: { amount: 120 },
  agent_identity: { id: 'billing-bot', label: 'Billing bot' },
  idempotency_key: `sdk-${process.pid}-${++sequence}`,
  ...extra,
});

/** The `fetch` the SDK uses, with every answer's status recorded. */
function recordingFetch(statuses: number[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    statuses.push(response.status);
    return response;
  };
}

const holdsWithKey = async (t: TestService, workspace: Workspace, key: string) =>
  (
    await t.service.ctx.db.all('SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2', [
      workspace.id,
      key,
    ])
  ).length;

/** Resolves once the hold is pending in storage, so a decision can be made while the SDK waits. */
const pendingHoldOf = (t: TestService, workspace: Workspace, idempotencyKey: string): Promise<string> =>
  until('the hold to be stored', async () => {
    const row = await t.service.ctx.db.one<{ id: string }>(
      'SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
      [workspace.id, idempotencyKey],
    );
    return row?.id;
  });

for (const backend of backends) {
  describe(`SDK against the service on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let client: ApprovalsClient;
    let key: string;
    before(async () => {
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001' },
      });
      ({ workspace, key } = await t.workspace({ config: SDK_POLICY }));
      client = new ApprovalsClient({ apiKey: key, baseUrl: t.url });
    });
    after(() => t.close());

    test('allowed: answered at once, nothing more asked', async () => {
      const statuses: number[] = [];
      const sdk = new ApprovalsClient({ apiKey: key, baseUrl: t.url, fetch: recordingFetch(statuses) });
      const result = await sdk.hold(request('read_balance'));
      assert.deepEqual(statuses, [201]);
      assert.equal(result.status, 'auto_allowed');
      assert.equal(result.approved, true);
      assert.equal(result.rejected, false);
      assert.equal(result.decision, null);
      assert.match(result.id, /^svc_pa_/);
      assert.equal(result.statusUrl, `${t.url}/a/${result.id}`);
    });

    test('denied: rejected, with the rule reason', async () => {
      const result = await client.hold(request('delete_account'));
      assert.equal(result.status, 'rejected');
      assert.equal(result.rejected, true);
      assert.equal(result.approved, false);
      assert.deepEqual(
        {
          verdict: result.decision?.verdict,
          reason: result.decision?.reason,
          channel: result.decision?.channel,
        },
        { verdict: 'reject', reason: 'Accounts are closed by support', channel: 'rule' },
      );
    });

    test('pending, then approved while hold() waits', async () => {
      const submitted = request('send_invoice');
      const waiting = client.hold(submitted);
      const id = await pendingHoldOf(t, workspace, submitted.idempotency_key);
      await decideAs(t, workspace.id, id, 'approve', 'admin@acme.test', 'fine');
      const result = await waiting;
      assert.equal(result.id, id);
      assert.equal(result.status, 'approved');
      assert.equal(result.approved, true);
      assert.equal(result.rejected, false);
      assert.equal(result.decision?.channel, 'inbox');
      assert.equal(result.decision?.reason, 'fine');
      assert.equal(result.record?.approvals.received, 1);
    });

    test('pending, then rejected: wait: false returns at once, waitForDecision sees the rejection', async () => {
      const submitted = await client.hold(request('send_invoice', { wait: false }));
      assert.equal(submitted.status, 'pending');
      assert.equal(submitted.approved || submitted.rejected, false);
      const waiting = client.waitForDecision(submitted.id, { timeoutMs: 30_000 });
      await decideAs(t, workspace.id, submitted.id, 'reject', 'admin@acme.test', 'not this month');
      const result = await waiting;
      assert.equal(result.status, 'rejected');
      assert.equal(result.rejected, true);
      assert.equal(result.decision?.reason, 'not this month');
      assert.equal((await client.getHold(submitted.id)).status, 'rejected');
    });

    test('a repeated hold() with the same key is the same hold, marked replayed, decided state included', async () => {
      const submitted = request('send_invoice', { wait: false });
      const first = await client.hold(submitted);
      await decideAs(t, workspace.id, first.id, 'approve');
      const again = await client.hold(submitted);
      assert.equal(again.id, first.id);
      assert.equal(again.replayed, true);
      // The replayed answer says "pending" (the first answer, unchanged); the SDK reads the truth.
      assert.equal(again.status, 'approved');
      assert.equal(again.approved, true);
      assert.equal(await holdsWithKey(t, workspace, submitted.idempotency_key), 1);
    });

    test('a timeout with no decision resolves pending; expiry ends the wait as expired', async () => {
      const submitted = await client.hold(request('send_invoice', { wait: false }));
      const started = Date.now();
      const timedOut = await client.waitForDecision(submitted.id, { timeoutMs: 1500 });
      assert.ok(Date.now() - started >= 1400, 'waited out the timeout');
      assert.equal(timedOut.status, 'pending');
      assert.equal(timedOut.approved || timedOut.rejected, false);

      const waiting = client.waitForDecision(submitted.id, { timeoutMs: 30_000 });
      t.clock.advance(31 * 60_000);
      const expired = await waiting;
      assert.equal(expired.status, 'expired');
      assert.equal(expired.approved, false);
      assert.equal(expired.rejected, false);
      assert.equal(expired.decision, null);
    });

    test('a lost answer is retried with the same key: one hold, and the caller sees it', async () => {
      let lost = 0;
      // The first submission reaches the service, but its answer never reaches the caller.
      const losing: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        if (lost++ > 0) return response;
        await response.arrayBuffer();
        throw new TypeError('fetch failed: the connection dropped before the answer');
      };
      const sdk = new ApprovalsClient({ apiKey: key, baseUrl: t.url, fetch: losing });
      const submitted = request('send_invoice', { wait: false });
      const result = await sdk.hold(submitted);
      assert.equal(result.replayed, true, 'the retry was answered from the first hold');
      assert.equal(result.status, 'pending');
      assert.equal(await holdsWithKey(t, workspace, submitted.idempotency_key), 1);
    });

    test('an abort stops a wait at once; the hold stays pending', async () => {
      const submitted = await client.hold(request('send_invoice', { wait: false }));
      const controller = new AbortController();
      const events = t.service.ctx.holdEvents;
      const before = events.waiting;
      const waiting = client.waitForDecision(submitted.id, { signal: controller.signal });
      waiting.catch(() => {}); // awaited below; an early failure must not go unhandled
      // Aborted while the wait is open on the server.
      await until('the wait to be open on the server', () => (events.waiting > before ? true : undefined));
      controller.abort();
      const started = Date.now();
      await assert.rejects(waiting, { name: 'AbortError' });
      assert.ok(Date.now() - started < 1000, 'rejected promptly');
      assert.equal((await client.getHold(submitted.id)).status, 'pending');
      // An abort before the submission sends nothing.
      const aborted = AbortSignal.abort();
      const unsent = request('send_invoice', { signal: aborted });
      await assert.rejects(client.hold(unsent), { name: 'AbortError' });
      assert.equal(await holdsWithKey(t, workspace, unsent.idempotency_key), 0);
    });

    test('invalid input: a typed error with the contract code and fields; no key, no request', async () => {
      const error = await client.hold(request('bad tool name!')).catch((e: unknown) => e);
      assert.ok(error instanceof ApprovalsApiError);
      assert.equal(error.status, 422);
      assert.equal(error.code, 'validation_failed');
      assert.equal(error.issues[0]?.field, 'tool_name');
      assert.equal(error.rateLimit.limit, 120);
      const unknown = await client.getHold('svc_pa_doesnotexistdoesnotexist').catch((e: unknown) => e);
      assert.ok(unknown instanceof ApprovalsApiError);
      assert.equal(unknown.code, 'not_found');
      await assert.rejects(client.hold({ ...request('send_invoice'), idempotency_key: '' }), TypeError);
      const wrongKey = new ApprovalsClient({ apiKey: 'svc_live_nope', baseUrl: t.url });
      await assert.rejects(wrongKey.getHold('svc_pa_x'), { code: 'unauthorized', status: 401 });
    });

    test('429: the SDK waits Retry-After and goes on; without retries the error has the figures', async () => {
      const { key: ownKey } = await t.workspace({ config: SDK_POLICY });
      // Move the clock to 3 s before a window ends, so Retry-After is short.
      t.clock.advance(60_000 - (t.clock.now() % 60_000) - 3000);
      const spent = await Promise.all(
        Array.from({ length: 120 }, () => call(t.url, 'GET', '/api/v1/holds/svc_pa_x', { key: ownKey })),
      );
      assert.ok(spent.every((answer) => answer.status === 404));

      const impatient = new ApprovalsClient({ apiKey: ownKey, baseUrl: t.url, maxRetries: 0 });
      const error = await impatient.hold(request('read_balance')).catch((e: unknown) => e);
      assert.ok(error instanceof ApprovalsApiError);
      assert.equal(error.code, 'rate_limited');
      assert.equal(error.rateLimit.limit, 120);
      assert.equal(error.rateLimit.remaining, 0);
      assert.ok(error.rateLimit.retryAfterSeconds! >= 1 && error.rateLimit.retryAfterSeconds! <= 3);

      const statuses: number[] = [];
      const patient = new ApprovalsClient({
        apiKey: ownKey,
        baseUrl: t.url,
        fetch: recordingFetch(statuses),
      });
      const result = await patient.hold(request('read_balance'));
      assert.equal(result.status, 'auto_allowed');
      assert.equal(statuses[0], 429);
      assert.equal(statuses.at(-1), 201);
    });

    test('webhook deliveries verify with the secret; a changed body or another secret does not', async () => {
      // The hold's event is the one checked; a checkpoint event may come first.
      const receiver = await startReceiver({ ignore: isCheckpointEvent });
      try {
        const { workspace: hooked, key: hookedKey } = await t.workspace({ config: SDK_POLICY });
        const applied = await applyConfig(
          t.service.ctx,
          hooked,
          parseConfig(`webhook: { url: "${receiver.url}" }\n`),
        );
        const secret = applied.webhook_secret!;
        const sdk = new ApprovalsClient({ apiKey: hookedKey, baseUrl: t.url });
        const denied = await sdk.hold(request('delete_account'));
        const [delivery] = await receiver.waitFor(1);
        const signature = delivery!.headers['x-service-signature'] as string;
        assert.equal(await verifyWebhookSignature(delivery!.body, signature, secret), true);
        assert.equal(await verifyWebhookSignature(Buffer.from(delivery!.body), signature, secret), true);
        assert.equal(await verifyWebhookSignature(`${delivery!.body} `, signature, secret), false);
        assert.equal(await verifyWebhookSignature(delivery!.body, signature, `${secret}x`), false);
        const event = JSON.parse(delivery!.body) as WebhookEvent;
        assert.equal(event.id, denied.id);
        assert.equal(event.event, 'hold.rejected');
      } finally {
        await receiver.close();
      }
    });

    test('the evidence export verifies offline, from the CLI and from the app; tampering is found', async () => {
      await client.hold(request('read_balance'));
      const keys = (await call(t.url, 'GET', '/.well-known/approvals-audit-key')).body;
      const run = await approvals(t.storage, ['evidence', 'export', '--workspace', workspace.slug]);
      assert.equal(run.code, 0, run.stderr);
      const lines = run.stdout.trimEnd().split('\n');
      const checked = (await call(t.url, 'GET', '/api/v1/audit/verify', { key })).body;
      assert.equal(lines.length, checked.checked + 1, 'a header, then every entry');

      const intact = await verifyEvidenceExport(run.stdout, { keys });
      assert.deepEqual(pick(intact), {
        valid: true,
        checked: checked.checked,
        first_invalid: null,
        signature: 'valid',
      });
      assert.deepEqual(intact.head, checked.head);
      assert.equal(intact.orgId, workspace.id);

      // Read as a stream: a file, and the app's download.
      const file = join(t.storage.env.DATA_DIR, 'evidence.jsonl');
      writeFileSync(file, run.stdout);
      assert.equal((await verifyEvidenceExport(createReadStream(file), { keys })).valid, true);
      const session = await appClient(t).signIn(workspace, 'bob@acme.test');
      const download = await fetch(`${t.url}/app/evidence/export`, {
        headers: { cookie: `approvals_session=${session.cookie}` },
      });
      assert.equal(download.status, 200);
      assert.match(download.headers.get('content-disposition')!, /attachment; filename="evidence-.+\.jsonl"/);
      assert.equal((await verifyEvidenceExport(download.body!, { keys })).valid, true);
      assert.equal((await fetch(`${t.url}/app/evidence/export`, { redirect: 'manual' })).status, 303);

      // Without keys the chain is checked and the signature is not.
      assert.equal((await verifyEvidenceExport(run.stdout)).signature, 'unchecked');

      const entry = (seq: number) => JSON.parse(lines[seq]!);
      const rewrite = (edit: (all: string[]) => string[]) => edit([...lines]).join('\n');
      const changed = rewrite((all) => {
        all[2] = JSON.stringify({ ...entry(2), data: { ...entry(2).data, name: 'Evil' } });
        return all;
      });
      assert.deepEqual((await verifyEvidenceExport(changed, { keys })).first_invalid, {
        seq: 2,
        reason: 'hash_mismatch',
      });
      const removed = rewrite((all) => all.filter((_, index) => index !== 3));
      assert.deepEqual((await verifyEvidenceExport(removed, { keys })).first_invalid, {
        seq: 3,
        reason: 'sequence_gap',
      });
      const cut = rewrite((all) => all.slice(0, -2));
      assert.deepEqual((await verifyEvidenceExport(cut, { keys })).first_invalid, {
        seq: lines.length - 2,
        reason: 'truncated',
      });
      // A forger who rebuilds the whole chain cannot sign the new head.
      const header = JSON.parse(lines[0]!);
      const forgedHead = rewrite((all) => {
        all[0] = JSON.stringify({
          ...header,
          checkpoint: { ...header.checkpoint, signed_at: '2020-01-01T00:00:00.000Z' },
        });
        return all;
      });
      const forged = await verifyEvidenceExport(forgedHead, { keys });
      assert.deepEqual(pick(forged), {
        valid: false,
        checked: checked.checked,
        first_invalid: { seq: header.checkpoint.seq, reason: 'checkpoint_invalid' },
        signature: 'invalid',
      });
      const stripped = rewrite((all) => {
        all[0] = JSON.stringify({ ...header, checkpoint: null });
        return all;
      });
      const unsigned = await verifyEvidenceExport(stripped, { keys });
      assert.equal(unsigned.signature, 'invalid');
      assert.deepEqual(unsigned.first_invalid, { seq: 1, reason: 'checkpoint_missing' });
      await assert.rejects(verifyEvidenceExport('{"hello":1}\n'), /Not an evidence export: line 1/);
      await assert.rejects(verifyEvidenceExport(`${lines[0]}\nnot json\n`), /line 2 is not JSON/);
    });
  });
}

const pick = (v: EvidenceVerification) => ({
  valid: v.valid,
  checked: v.checked,
  first_invalid: v.first_invalid,
  signature: v.signature,
});

test(
  'PostgreSQL away for a moment: the SDK retries the 503 and makes exactly one hold',
  { skip: postgres.skip },
  async () => {
    const { t, proxy, close } = await startTestServiceOnCuttablePostgres();
    try {
      const { workspace, key } = await t.workspace({ config: SDK_POLICY });
      const statuses: number[] = [];
      const sdk = new ApprovalsClient({ apiKey: key, baseUrl: t.url, fetch: recordingFetch(statuses) });
      await proxy.cut();
      const submitted = request('read_balance');
      const holding = sdk.hold(submitted);
      holding.catch(() => {}); // awaited below; an early failure must not go unhandled
      // Back once the SDK has been answered 503; its retry gets through.
      await until('a 503', () => (statuses.includes(503) ? true : undefined));
      await proxy.restore();
      const result = await holding;
      assert.equal(result.status, 'auto_allowed');
      assert.equal(statuses[0], 503);
      assert.equal(statuses.at(-1), 201);
      assert.equal(await holdsWithKey(t, workspace, submitted.idempotency_key), 1);
    } finally {
      await close();
    }
  },
);
