/**
 * The Python SDK (packages/python) against the real service: this file starts the service, prepares
 * what the Python tests need (workspaces, keys, a real webhook delivery signed during a secret
 * rotation, a real evidence export with its public key, canonical JSON written by the TypeScript
 * code), and runs `python3 -m unittest` on packages/python/tests with it. While they run, the Python
 * tests ask a small loopback helper here to decide a pending hold (as an approver in the inbox
 * would) or to use up a rate-limit window; everything else they do through the public API.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { canonicalJson } from '../packages/sdk/src/canonical-json.ts';
import { verifyEvidenceExport } from '../packages/sdk/src/evidence.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { exportEvidence } from '../src/services/export-evidence.ts';
import { rotateWebhookSecret } from '../src/services/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { ROOT } from './support/cli.ts';
import { call } from './support/http.ts';
import { isCheckpointEvent, type Receiver, startReceiver } from './support/receiver.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';
import { SDK_POLICY } from './support/sdk-policy.ts';

const PYTHON = 'python3';

/** Why the Python suite cannot run here, or undefined when it can. */
function pythonSkip(): string | undefined {
  const probe = spawnSync(PYTHON, ['-c', 'import sys; print("%d.%d" % sys.version_info[:2])'], {
    encoding: 'utf8',
  });
  if (probe.error || probe.status !== 0) return 'python3 is not on PATH: the Python SDK suite is skipped';
  const [major, minor] = probe.stdout.trim().split('.').map(Number);
  if (major! < 3 || (major === 3 && minor! < 9))
    return `python3 is ${probe.stdout.trim()}; the Python SDK needs 3.9 or later`;
  return undefined;
}

/** Values whose canonical JSON the Python SDK must write byte for byte as the TypeScript one does. */
const CANONICAL_CASES: unknown[] = [
  { b: 1, a: [true, false, null], c: { z: 'z', y: 'y' } },
  [0, -0, 1, -1, 0.1 + 0.2, 1e21, 1e20, 1e-7, 1.5e-7, 0.000001, 5e-324, 1.7976931348623157e308, 2 ** 53],
  [123456789012345680000, 4.35, 0.5, -1234.5678, 100, 1e300, 2 ** -30],
  'plain',
  'quote " backslash \\ slash / tab \t newline \n return \r bell \u0007 nul \u0000 del \u007f',
  'Zoë ✓ 😀 \u2028 \u2029 \ufeff',
  'lone \ud800 and \udfff surrogates',
  { '\uffff': 1, '😀': 2, é: 3, E: 4, e: 5, '': 6, '\u0001': 7 },
  { nested: [{ b: [], a: {} }, [[[]]]], empty: '' },
];

describe('the Python SDK against the service', { skip: pythonSkip() }, () => {
  let t: TestService;
  let workspace: Workspace;
  let key: string;
  let spare: { workspace: Workspace; key: string };
  let receiver: Receiver;
  let helper: http.Server;
  let dir: string;
  const env: Record<string, string> = {};

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'python-sdk-'));
    t = await startTestService(sqlite, {
      env: { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.001' },
    });
    ({ workspace, key } = await t.workspace({ config: SDK_POLICY }));
    spare = await t.workspace({ config: SDK_POLICY });

    // A real delivery, signed with the new and the previous secret (a rotation's overlap).
    receiver = await startReceiver({ ignore: isCheckpointEvent });
    const applied = await applyConfig(
      t.service.ctx,
      workspace,
      parseConfig(`webhook: { url: "${receiver.url}" }\n`),
    );
    const previous = applied.webhook_secret!;
    const { secret } = await rotateWebhookSecret(t.service.ctx, workspace.id);
    const denied = await call(t.url, 'POST', '/api/v1/holds', {
      key,
      body: {
        tool_name: 'delete_account',
        arguments: { account: 'A-1' },
        agent_identity: { id: 'setup' },
        idempotency_key: 'setup-webhook',
      },
    });
    assert.equal(denied.status, 201);
    const [delivery] = await receiver.waitFor(1);
    assert.equal(String(delivery!.headers['x-service-signature']).split(',').length, 2);
    writeFileSync(join(dir, 'webhook-body.bin'), delivery!.body);
    writeFileSync(join(dir, 'webhook-headers.json'), JSON.stringify(delivery!.headers));

    // Holds whose arguments put numbers, escapes and key order of every kind into the evidence.
    for (const [index, args] of [
      { amount: 1e21, ratio: 0.1 + 0.2, tiny: 1e-7, big: 123456789012345680000, negative: -0.5 },
      { text: 'Zoë ✓ 😀 \u0007 \u2028 "quoted" \\', '\uffff': 1, '😀': 2, é: 3, E: 4 },
    ].entries()) {
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: {
          tool_name: 'read_balance',
          arguments: args,
          agent_identity: { id: 'setup', label: 'Setup ✓' },
          context: { run: index },
          idempotency_key: `setup-evidence-${index}`,
        },
      });
      assert.equal(answer.status, 201);
    }

    // The evidence export as the service writes it (the CLI and the app's download use this), the
    // published key, and what the TypeScript SDK makes of them.
    let exported = '';
    for await (const chunk of exportEvidence(t.service.ctx, workspace.id)) exported += chunk;
    writeFileSync(join(dir, 'evidence.jsonl'), exported);
    const published = (await call(t.url, 'GET', '/.well-known/approvals-audit-key')).body;
    writeFileSync(join(dir, 'audit-key.json'), JSON.stringify(published));
    writeFileSync(join(dir, 'audit-key.pem'), published.public_key_pem);
    const expected = await verifyEvidenceExport(exported, { keys: published });
    assert.equal(expected.valid, true);
    writeFileSync(join(dir, 'evidence-expected.json'), JSON.stringify(expected));

    writeFileSync(
      join(dir, 'canonical.json'),
      JSON.stringify(
        CANONICAL_CASES.map((value) => ({ input: JSON.stringify(value), canonical: canonicalJson(value) })),
      ),
    );

    helper = await startHelper();
    Object.assign(env, {
      APPROVALS_URL: t.url,
      APPROVALS_KEY: key,
      APPROVALS_WORKSPACE: workspace.slug,
      APPROVALS_SPARE_KEY: spare.key,
      APPROVALS_WEBHOOK_SECRET: secret,
      APPROVALS_WEBHOOK_PREVIOUS_SECRET: previous,
      APPROVALS_TEST_FILES: dir,
      APPROVALS_TEST_HELPER: `http://127.0.0.1:${(helper.address() as AddressInfo).port}`,
    });
  });

  after(async () => {
    helper?.closeAllConnections();
    helper?.close();
    await receiver?.close();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /**
   * POST /decide `{ idempotency_key, verdict, comment? }`: once the workspace's hold with that key is
   * stored, the admin decides it in the inbox. POST /exhaust: the spare workspace's `v1` window is
   * used up, 4 s before it ends, so its Retry-After is short.
   */
  function startHelper(): Promise<http.Server> {
    const server = http.createServer((request, response) => {
      let raw = '';
      request.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
      request.on('end', () => {
        const answer = (status: number, body: unknown) =>
          response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        handle(request.url ?? '', raw ? JSON.parse(raw) : {}).then(
          (body) => answer(200, body),
          (error: unknown) => answer(500, { error: String(error) }),
        );
      });
    });
    return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
  }

  async function handle(path: string, body: any): Promise<unknown> {
    if (path === '/decide') {
      const id = await until('the hold to be stored', async () => {
        const row = await t.service.ctx.db.one<{ id: string }>(
          'SELECT id FROM holds WHERE workspace_id = $1 AND idempotency_key = $2',
          [workspace.id, body.idempotency_key],
        );
        return row?.id;
      });
      await decideAs(t, workspace.id, id, body.verdict, 'admin@acme.test', body.comment ?? null);
      return { id };
    }
    if (path === '/exhaust') {
      await t.clock.advance(60_000 - (t.clock.now() % 60_000) - 4000);
      const spent = await Promise.all(
        Array.from({ length: 120 }, () => call(t.url, 'GET', '/api/v1/holds/svc_pa_x', { key: spare.key })),
      );
      assert.ok(spent.every((answer) => answer.status === 404));
      return { spent: spent.length };
    }
    throw new Error(`unknown helper path ${path}`);
  }

  test('python3 -m unittest passes on packages/python/tests', async (context) => {
    const run = await runPython(['-m', 'unittest', 'discover', '-s', 'packages/python/tests', '-v'], env);
    assert.equal(run.code, 0, `python3 -m unittest failed:\n${run.output}`);
    context.diagnostic(run.output.match(/^Ran \d+ tests? in .*$/m)?.[0] ?? 'no summary');
    if (process.env.PYTHON_SDK_TEST_OUTPUT) writeFileSync(process.env.PYTHON_SDK_TEST_OUTPUT, run.output);
    // Every suite ran against the service: none of them was skipped for want of it.
    assert.doesNotMatch(run.output, /skipped/, run.output);
  });
});

function runPython(
  args: string[],
  settings: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, args, {
      cwd: ROOT,
      env: { ...process.env, ...settings, PYTHONDONTWRITEBYTECODE: '1', PYTHONUNBUFFERED: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}
