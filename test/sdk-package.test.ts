/**
 * The SDK as users get it: `npm pack` of packages/sdk, installed offline into an empty project, run on
 * the machine's own Node.js, Node.js 24, Bun and Deno, type-checked as a consumer would, and run in
 * Chromium.
 * It must have no runtime dependency and reach for nothing but `fetch` and WebCrypto.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { exportEvidence } from '../src/services/export-evidence.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { sqlite } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser, openPage } from './support/browser.ts';
import { NODE, ROOT } from './support/cli.ts';
import { startTestService, type TestService } from './support/service.ts';

const run = promisify(execFile);
const SDK = join(ROOT, 'packages/sdk');
const TSC = join(ROOT, 'node_modules/.bin/tsc');
/** The machine's own Node.js (v20 here), beside the project's Node.js 24. */
const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => existsSync(path));

const POLICY = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: delete_account, classification: deny }
`;

/** A program a user might write against the installed package; prints what it saw as JSON. */
const CONSUMER = `
import { ApprovalsClient, ApprovalsApiError, verifyWebhookSignature } from '@approvals/sdk';
const args = globalThis.Deno ? globalThis.Deno.args : process.argv.slice(2);
const [baseUrl, apiKey, body, signature, secret] = args;
const client = new ApprovalsClient({ baseUrl, apiKey });
const id = 'consumer-' + process.version + '-' + Date.now();
const allowed = await client.hold({ tool_name: 'read_balance', agent_identity: { id: 'consumer' }, idempotency_key: id + '-a' });
const denied = await client.hold({ tool_name: 'delete_account', agent_identity: { id: 'consumer' }, idempotency_key: id + '-d' });
const missingKey = await client.hold({ tool_name: 'read_balance', agent_identity: { id: 'consumer' } }).catch((e) => e.name);
const unknown = await client.getHold('svc_pa_unknownunknownunknown').catch((e) => e instanceof ApprovalsApiError && e.code);
const webhook = await verifyWebhookSignature(body, signature, secret);
console.log(JSON.stringify({ allowed: allowed.status, denied: denied.decision.reason, missingKey, unknown, webhook }));
`;

/** The same, typed: it must compile against the published declarations, and misuse must not. */
const TYPED_CONSUMER = `
import { ApprovalsClient, type HoldResult, type HoldStatus, verifyEvidenceExport } from '@approvals/sdk';
const client = new ApprovalsClient({ baseUrl: 'https://approvals.example', apiKey: 'svc_test_x' });
const result: HoldResult = await client.hold({
  tool_name: 'send_invoice',
  arguments: { amount: 10 },
  agent_identity: { id: 'bot' },
  idempotency_key: 'inv-1',
  timeoutMs: 60_000,
});
const status: HoldStatus = result.status;
const reason: string | null | undefined = result.decision?.reason;
const verified: boolean = (await verifyEvidenceExport('')).valid;
// @ts-expect-error idempotency_key is required
await client.hold({ tool_name: 'send_invoice', agent_identity: { id: 'bot' } });
// @ts-expect-error agent_identity is required
await client.hold({ tool_name: 'send_invoice', idempotency_key: 'k' });
export { status, reason, verified };
`;

describe('the SDK package', () => {
  let dir: string;
  let project: string;
  let files: string[];
  let t: TestService;
  let workspace: Workspace;
  let key: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'approvals-sdk-'));
    // npm runs the package's prepack build (tsc from the project's node_modules/.bin).
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
    };
    delete env.NODE_TEST_CONTEXT;
    const packed = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: SDK, env });
    const [info] = JSON.parse(packed.stdout) as [{ filename: string; files: { path: string }[] }];
    files = info.files.map((file) => file.path).sort();
    project = join(dir, 'consumer');
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    await run('npm', ['install', join(dir, info.filename), '--offline', '--no-audit', '--no-fund'], {
      cwd: project,
      env,
    });
    t = await startTestService(sqlite);
    ({ workspace, key } = await t.workspace({ config: POLICY }));
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('has no runtime dependency, and its code imports only its own files', () => {
    const manifest = JSON.parse(readFileSync(join(SDK, 'package.json'), 'utf8'));
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies']) {
      assert.equal(manifest[field], undefined, `package.json has no ${field}`);
    }
    const sources = readdirSync(join(SDK, 'src')).map((name) => join(SDK, 'src', name));
    const built = readdirSync(join(project, 'node_modules/@approvals/sdk/dist'))
      .filter((name) => name.endsWith('.js'))
      .map((name) => join(project, 'node_modules/@approvals/sdk/dist', name));
    for (const file of [...sources, ...built]) {
      const code = readFileSync(file, 'utf8');
      const specifiers = [...code.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
      for (const specifier of specifiers) {
        assert.match(
          specifier,
          /^\.\/[a-z-]+\.(ts|js)$/,
          `${file} imports only its own files, not ${specifier}`,
        );
      }
      // Globals that exist in Node.js only would break browsers and edge runtimes.
      const withoutComments = code.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      assert.doesNotMatch(withoutComments, /\b(require|process|Buffer|__dirname)\b|\bglobal\./, file);
    }
  });

  test('packs its build and README only, and installs into an empty project with nothing else', () => {
    assert.ok(files.includes('README.md'));
    assert.ok(files.includes('dist/index.js') && files.includes('dist/index.d.ts'));
    assert.deepEqual(
      files.filter((path) => !/^dist\/[a-z-]+\.(js|d\.ts)$/.test(path)),
      ['README.md', 'package.json'],
    );
    assert.deepEqual(readdirSync(join(project, 'node_modules')).sort(), ['.package-lock.json', '@approvals']);
  });

  const runtimes: [string, string | undefined, string[]][] = [
    ['the machine’s Node.js', SYSTEM_NODE, []],
    ['Node.js 24', NODE, []],
    ['Bun', join(ROOT, 'node_modules/.bin/bun'), ['run']],
    // Deno is installed by .ci/run (see there why it is not a dev dependency).
    ['Deno', process.env.DENO_PATH, ['run', '--allow-net=127.0.0.1', '--allow-read']],
  ];
  for (const [label, runtime, command] of runtimes) {
    test(
      `works in that project on ${label}`,
      { skip: runtime ? undefined : `${label} not installed (DENO_PATH unset)` },
      async () => {
        writeFileSync(join(project, 'consumer.mjs'), CONSUMER);
        const body = '{"event":"hold.approved"}';
        const secret = 'whsec_c2VjcmV0';
        const signature = createHmac('sha256', secret).update(body).digest('hex');
        const args = [...command, 'consumer.mjs', t.url, key, body, signature, secret];
        const { stdout } = await run(runtime!, args, {
          cwd: project,
          env: { ...process.env, NO_COLOR: '1' },
        });
        assert.deepEqual(JSON.parse(stdout), {
          allowed: 'auto_allowed',
          denied: 'Denied by rule: Tool classified deny',
          missingKey: 'TypeError',
          unknown: 'not_found',
          webhook: true,
        });
      },
    );
  }

  test('its declarations type-check a TypeScript consumer, and catch misuse', async () => {
    writeFileSync(join(project, 'consumer.ts'), TYPED_CONSUMER);
    const compilerOptions = {
      target: 'es2022',
      module: 'nodenext',
      moduleResolution: 'nodenext',
      lib: ['es2022', 'dom'],
      types: [],
      strict: true,
      noEmit: true,
    };
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({ compilerOptions, files: ['consumer.ts'] }),
    );
    const result = await run(TSC, ['-p', project]).catch((error: { stdout: string }) => error);
    assert.equal(result.stdout, '', 'no type errors');
  });

  describe('in Chromium', { skip: browserSkip }, () => {
    let browser: Browser;
    let site: http.Server;
    let origin: string;
    before(async () => {
      browser = await launchBrowser();
      // One origin for the page, the package's files and the API (the Core API sends no CORS headers).
      const dist = join(project, 'node_modules/@approvals/sdk/dist');
      site = http.createServer(async (request, response) => {
        const path = request.url ?? '/';
        if (path.startsWith('/sdk/')) {
          const file = join(dist, path.slice('/sdk/'.length));
          if (!file.startsWith(dist) || !existsSync(file)) return response.writeHead(404).end();
          response.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file));
          return;
        }
        if (path.startsWith('/api/')) {
          const chunks: Buffer[] = [];
          for await (const chunk of request) chunks.push(chunk as Buffer);
          const upstream = await fetch(t.url + path, {
            method: request.method,
            headers: { authorization: request.headers.authorization!, 'content-type': 'application/json' },
            body: chunks.length ? Buffer.concat(chunks) : undefined,
          });
          response.writeHead(upstream.status, { 'content-type': 'application/json' });
          response.end(Buffer.from(await upstream.arrayBuffer()));
          return;
        }
        response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>SDK</title>');
      });
      await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
      origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    });
    after(async () => {
      await closeBrowser(browser);
      site?.close();
    });

    test('holds, webhook signatures and the offline evidence check run in a browser', async () => {
      let exported = '';
      for await (const chunk of exportEvidence(t.service.ctx, workspace.id)) exported += chunk;
      const keys = await (await fetch(`${t.url}/.well-known/approvals-audit-key`)).json();
      const body = '{"event":"hold.rejected"}';
      const secret = 'whsec_YnJvd3Nlcg==';
      const signature = createHmac('sha256', secret).update(body).digest('hex');
      const { page, errors, close } = await openPage(browser);
      try {
        await page.goto(origin);
        const seen = await page.evaluate(
          async ({ apiKey, exported, keys, body, signature, secret }) => {
            const sdk = await import('/sdk/index.js' as string);
            const client = new sdk.ApprovalsClient({ baseUrl: location.origin, apiKey });
            const id = `browser-${Date.now()}`;
            const allowed = await client.hold({
              tool_name: 'read_balance',
              agent_identity: { id: 'browser' },
              idempotency_key: `${id}-a`,
            });
            const denied = await client.hold({
              tool_name: 'delete_account',
              agent_identity: { id: 'browser' },
              idempotency_key: `${id}-d`,
            });
            const evidence = await sdk.verifyEvidenceExport(exported, { keys });
            const stream = new Blob([exported]).stream();
            return {
              allowed: allowed.status,
              denied: denied.rejected,
              webhook: await sdk.verifyWebhookSignature(body, signature, secret),
              forged: await sdk.verifyWebhookSignature(`${body} `, signature, secret),
              evidence: { valid: evidence.valid, signature: evidence.signature },
              streamed: (await sdk.verifyEvidenceExport(stream, { keys })).valid,
              tampered: (await sdk.verifyEvidenceExport(exported.replace('"Acme"', '"Evil"'), { keys }))
                .valid,
            };
          },
          { apiKey: key, exported, keys, body, signature, secret },
        );
        assert.deepEqual(seen, {
          allowed: 'auto_allowed',
          denied: true,
          webhook: true,
          forged: false,
          evidence: { valid: true, signature: 'valid' },
          streamed: true,
          tampered: false,
        });
        assert.deepEqual(errors, []);
      } finally {
        await close();
      }
    });
  });
});
