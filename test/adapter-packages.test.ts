/**
 * The agent-framework adapters as users get them (issue 24, part 4): `npm pack` of packages/ai-sdk and
 * packages/openai-agents compiles each to JavaScript; installed offline into an empty project, each
 * runs on the machine's own Node.js without its framework installed (they import only its types).
 * Their behaviour against the real service is in test/ai-sdk-adapter.test.ts and
 * test/openai-agents-adapter.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { NODE, ROOT } from './support/cli.ts';

const run = promisify(execFile);
/** The machine's own Node.js (v20 here), as most users' would be, else the project's. */
const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => existsSync(path)) ?? NODE;

/** A client that answers every hold with `status`, recording what it was asked. */
const FAKE_CLIENT = `
const asked = [];
const client = (status) => ({
  async hold(request) {
    asked.push(request);
    return { id: 'svc_pa_' + 'x'.repeat(22), status, statusUrl: 'https://approvals.example/a/x', replayed: false,
      approved: status === 'approved', rejected: status === 'rejected', decision: status === 'rejected' ? { reason: 'No.' } : null };
  },
});
`;

const CONSUMERS: Record<string, string> = {
  'ai-sdk': `${FAKE_CLIENT}
import { withApprovals, ApprovalRefusedError } from '@approvals/ai-sdk';
const tools = { send_invoice: { inputSchema: {}, execute: async (input) => 'sent ' + input.amount } };
const options = { toolCallId: 'call_1', messages: [] };
const approved = await withApprovals(tools, { client: client('approved'), agent: { id: 'bot' } }).send_invoice.execute({ amount: 5 }, options);
const refused = await withApprovals(tools, { client: client('rejected'), agent: { id: 'bot' } }).send_invoice
  .execute({ amount: 5 }, options).catch((error) => error instanceof ApprovalRefusedError && error.message);
console.log(JSON.stringify({ approved, refused, key: asked[0].idempotency_key, args: asked[0].arguments }));
`,
  'openai-agents': `${FAKE_CLIENT}
import { runWithApprovals } from '@approvals/openai-agents';
const item = { rawItem: { type: 'function_call', callId: 'call_1' }, arguments: '{"amount":5}', name: 'send_invoice', agent: { name: 'Billing' } };
const answers = [];
let turns = 0;
const runner = { run: async () => turns++ === 0
  ? { interruptions: [item], state: { approve: () => answers.push('approve'), reject: (_, o) => answers.push('reject: ' + o.message) } }
  : { interruptions: [], finalOutput: 'done' } };
const { result, holds } = await runWithApprovals(runner, {}, 'Send it', { client: client('approved'), agentIdentity: { id: 'bot' } });
console.log(JSON.stringify({ approved: result.finalOutput, answers, key: asked[0].idempotency_key, args: asked[0].arguments, holds: holds.length }));
`,
};

describe('the adapter packages', () => {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-adapters-'));
  const packed: Record<string, { filename: string; files: string[] }> = {};
  const project = join(dir, 'consumer');
  // npm runs each package's prepack build (tsc from the project's node_modules/.bin).
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
  };
  delete env.NODE_TEST_CONTEXT;

  before(async () => {
    for (const name of Object.keys(CONSUMERS)) {
      const out = await run('npm', ['pack', '--json', '--pack-destination', dir], {
        cwd: join(ROOT, 'packages', name),
        env,
      });
      const [info] = JSON.parse(out.stdout) as [{ filename: string; files: { path: string }[] }];
      packed[name] = { filename: info.filename, files: info.files.map((file) => file.path).sort() };
    }
    mkdirSync(project);
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
    );
    // Without the frameworks (peer dependencies): the built code must not need them to run.
    const tarballs = Object.values(packed).map((p) => join(dir, p.filename));
    await run('npm', ['install', ...tarballs, '--offline', '--legacy-peer-deps', '--no-audit', '--no-fund'], {
      cwd: project,
      env,
    });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [name, consumer] of Object.entries(CONSUMERS)) {
    test(`@approvals/${name}: its build and README only, no runtime import, runs on plain Node.js`, async () => {
      assert.deepEqual(packed[name]!.files, [
        'README.md',
        'dist/index.d.ts',
        'dist/index.js',
        'package.json',
      ]);
      const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8'));
      assert.equal(manifest.dependencies, undefined, 'no dependencies, only a peer');
      const built = readFileSync(join(project, 'node_modules/@approvals', name, 'dist/index.js'), 'utf8');
      assert.doesNotMatch(
        built,
        /^\s*import\s|\bimport\(|\brequire\(/m,
        'the framework is imported for types only',
      );

      const script = join(project, `${name}.mjs`);
      writeFileSync(script, consumer);
      const { stdout } = await run(SYSTEM_NODE, [script], { cwd: project, env });
      const seen = JSON.parse(stdout);
      assert.equal(seen.key, `${name}:bot:call_1`);
      assert.deepEqual(seen.args, { amount: 5 });
      if (name === 'ai-sdk') {
        assert.equal(seen.approved, 'sent 5');
        assert.match(seen.refused, /send_invoice was not approved \(rejected\): No\./);
      } else {
        assert.equal(seen.approved, 'done');
        assert.deepEqual(seen.answers, ['approve']);
        assert.equal(seen.holds, 1);
      }
    });
  }
});
