/**
 * The agent-framework adapters as users get them (issue 24, part 4): `npm pack` of packages/ai-sdk and
 * packages/openai-agents compiles each to JavaScript; installed offline into an empty project, each
 * runs on the machine's own Node.js without its framework installed (they import only its types).
 * Their behaviour against the real service is in test/ai-sdk-adapter.test.ts and
 * test/openai-agents-adapter.test.ts.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ROOT } from './support/cli.ts';
import { SYSTEM_NODE } from './support/readme-example.ts';

const run = promisify(execFile);

/**
 * A client whose holds are pending until waited for, then `status`; it records what it was asked and,
 * in `events`, the order of submissions, waits and onHold calls.
 */
const FAKE_CLIENT = `
const asked = [];
const events = [];
const onHold = (hold) => events.push('onHold ' + hold.status);
const client = (decided) => ({
  async hold(request) {
    asked.push(request);
    events.push(request.wait === false ? 'submit' : 'wait');
    const status = request.wait === false ? 'pending' : decided;
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
const approved = await withApprovals(tools, { client: client('approved'), agent: { id: 'bot' }, onHold }).send_invoice.execute({ amount: 5 }, options);
const refused = await withApprovals(tools, { client: client('rejected'), agent: { id: 'bot' } }).send_invoice
  .execute({ amount: 5 }, options).catch((error) => error instanceof ApprovalRefusedError && error.message);
console.log(JSON.stringify({ approved, refused, key: asked[0].idempotency_key, args: asked[0].arguments, events: events.slice(0, 3) }));
`,
  'openai-agents': `${FAKE_CLIENT}
import { runWithApprovals } from '@approvals/openai-agents';
const item = { rawItem: { type: 'function_call', callId: 'call_1' }, arguments: '{"amount":5}', name: 'send_invoice', agent: { name: 'Billing' } };
const answers = [];
let turns = 0;
const runner = { run: async () => turns++ === 0
  ? { interruptions: [item], state: { approve: () => answers.push('approve'), reject: (_, o) => answers.push('reject: ' + o.message) } }
  : { interruptions: [], finalOutput: 'done' } };
const { result, holds } = await runWithApprovals(runner, {}, 'Send it', { client: client('approved'), agentIdentity: { id: 'bot' }, onHold });
console.log(JSON.stringify({ approved: result.finalOutput, answers, key: asked[0].idempotency_key, args: asked[0].arguments, holds: holds.length, events }));
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
      // Both adapters report a hold at the same moment: once submitted, before the wait.
      assert.deepEqual(seen.events, ['submit', 'onHold pending', 'wait']);
      if (name === 'ai-sdk') {
        assert.equal(seen.approved, 'sent 5');
        assert.match(seen.refused, /send_invoice was not approved \(rejected\): No\./);
      } else {
        assert.equal(seen.approved, 'done');
        assert.deepEqual(seen.answers, ['approve']);
        assert.equal(seen.holds, 1);
      }
      // What it needs is said where npm enforces it and where users read it; the settings are the CLI's.
      assert.equal(manifest.engines?.node, '>=18.17');
      const readme = readFileSync(join(ROOT, 'packages', name, 'README.md'), 'utf8');
      assert.match(readme, /Node\.js 18\.17 or later/);
      assert.doesNotMatch(readme, /APPROVALS_API_KEY|:3000/);
    });
  }
});
