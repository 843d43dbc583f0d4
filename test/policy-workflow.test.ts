/**
 * Issue 42, policy as code in CI: `simulate --format markdown` for a pull-request comment and
 * `--fail-on-change` to fail the check, `export --json` with the version, and the workflow in
 * docs/examples/approvals-policy.yml run step by step against a service: its shell steps in bash, as
 * GitHub runs them, with the CLI on the runtime dependencies alone (support/without-dev-dependencies.ts
 * stands in for its `npm ci --omit=dev`) and a stand-in `gh` that records the comment.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'yaml';
import { createApiKey } from '../src/services/api-keys.ts';
import { backends } from './support/backends.ts';
import { approvals, ROOT, type Run } from './support/cli.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
rules:
  - { name: Payments | all, tool: pay, effect: approval, approvers: [admin@acme.test] }
`;
/** Classifies read_balance as allowed: its two calls go from pending (a new tool) to allowed. */
const DRAFT = `${WORKSPACE}tools:
  - { connection: SDK, tool: read_balance, classification: allow }
`;
const WORKFLOW = join(ROOT, 'docs/examples/approvals-policy.yml');
const WITHOUT_DEV = join(ROOT, 'test/support/without-dev-dependencies.ts');

interface Step {
  name?: string;
  uses?: string;
  if?: string;
  run?: string;
  env?: Record<string, string>;
}

const dir = mkdtempSync(join(tmpdir(), 'policy-workflow-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function bash(script: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['--noprofile', '--norc', '-eo', 'pipefail', '-c', script], {
      cwd,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

for (const backend of backends) {
  describe(`policy as code in CI (${backend.name})`, { skip: backend.skip }, () => {
    let t: TestService;
    let adminKey: string;
    let slug: string;
    const remote = (args: string[]) =>
      approvals(t.storage, args, { APPROVALS_URL: t.url, APPROVALS_KEY: adminKey });
    const file = (name: string, text: string) => {
      const path = join(dir, `${backend.name}-${name}`);
      writeFileSync(path, text);
      return path;
    };

    before(async () => {
      t = await startTestService(backend);
      const made = await t.workspace({ config: WORKSPACE });
      slug = made.workspace.slug;
      adminKey = (
        await createApiKey(t.service.ctx, { workspace: made.workspace, env: 'live', scope: 'admin' })
      ).key;
      // Two calls nobody classified (pending, fail-closed) and one payment (pending by its rule).
      for (const tool_name of ['read_balance', 'read_balance', 'pay'])
        assert.equal(
          (await call(t.url, 'POST', '/api/v1/holds', { key: made.key, body: submission({ tool_name }) }))
            .status,
          201,
        );
    });
    after(() => t?.close());

    test('export --json: the workspace, its version and the file apply takes', async () => {
      const exported = await remote(['export', '--json']);
      assert.equal(exported.code, 0, exported.stderr);
      const { version, config } = JSON.parse(exported.stdout) as { version: number; config: object };
      assert.ok(Number.isInteger(version) && version > 0, `version ${version}`);
      const again = file('exported.json', JSON.stringify(config));
      const applied = await remote(['apply', '-f', again, '--expect-version', String(version), '--json']);
      assert.equal(applied.code, 0, applied.stderr);
      assert.deepEqual(JSON.parse(applied.stdout).items_changed, [], 'the file is the configuration');
    });

    test('simulate --format markdown: tables for a comment; --fail-on-change exits 5 only on a change', async () => {
      const draft = file('draft.yaml', DRAFT);
      const same = file('same.yaml', WORKSPACE);
      const changed = await remote(['simulate', '-f', draft, '--format', 'markdown', '--fail-on-change']);
      assert.equal(changed.code, 5, changed.stderr);
      assert.match(
        changed.stdout,
        /^### Approvals: what the draft would decide\n\n\*\*2 of 3 calls would be decided differently\*\*/,
      );
      assert.match(changed.stdout, /^\| approval \| allow \| 2 \|$/m);
      // The calls the draft keeps pending, by rule; a rule's name cannot break the table.
      assert.match(changed.stdout, /^\| Payments \\\| all \| 1 \| /m);
      const unchanged = await remote(['simulate', '-f', same, '--format', 'markdown', '--fail-on-change']);
      assert.equal(unchanged.code, 0, unchanged.stderr);
      assert.match(
        unchanged.stdout,
        /\*\*No call would be decided differently\*\* by the draft: 3 holds replayed/,
      );
      // Without --fail-on-change a change is no failure; the text report stays the default.
      const text = await remote(['simulate', '-f', draft]);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^2 would be decided differently, 1 the same\.$/m);
      // On the database, the same.
      const local = await approvals(t.storage, [
        'simulate',
        '--workspace',
        slug,
        '-f',
        draft,
        '--format',
        'markdown',
        '--fail-on-change',
      ]);
      assert.equal(local.code, 5, local.stderr);
      const undated = (text: string) => text.replace(/from \S+ to \S+;/, 'from … to …;');
      assert.equal(undated(local.stdout), undated(changed.stdout));
      const wrong = await remote(['simulate', '-f', draft, '--format', 'html']);
      assert.equal(wrong.code, 2);
      assert.match(wrong.stderr, /^approvals: --format is text or markdown\n/);
    });

    test('the example workflow, step by step: a pull request comments and fails, a merge applies', async () => {
      const text = readFileSync(WORKFLOW, 'utf8');
      // docs/cli.md shows this file as it is.
      assert.ok(readFileSync(join(ROOT, 'docs/cli.md'), 'utf8').includes(`\`\`\`yaml\n${text}\`\`\``));
      const workflow = parse(text) as {
        jobs: { policy: { env: Record<string, string>; steps: Step[] } };
      };
      const repository = join(dir, `${backend.name}-repository`);
      mkdirSync(join(repository, 'approvals'), { recursive: true });
      symlinkSync(ROOT, join(repository, 'approval-service'));
      const exported = JSON.parse((await remote(['export', '--json'])).stdout) as { version: number };
      writeFileSync(join(repository, 'approvals/acme.yaml'), DRAFT);
      writeFileSync(join(repository, 'approvals/acme.version'), `${exported.version}\n`);
      // `gh`, as GitHub's runner has it: records what it was asked to post.
      const bin = join(dir, `${backend.name}-bin`);
      mkdirSync(bin);
      writeFileSync(
        join(bin, 'gh'),
        `#!/bin/sh\necho "$@" > "${bin}/gh.args"\ncat "$5" > "${bin}/gh.body"\n`,
      );
      chmodSync(join(bin, 'gh'), 0o755);
      const summary = join(dir, `${backend.name}-summary.md`);
      const expressions: Record<string, string> = {
        '${{ vars.APPROVALS_URL }}': t.url,
        '${{ secrets.APPROVALS_KEY }}': adminKey,
        '${{ github.token }}': 'ghs_test',
        '${{ github.event.pull_request.number }}': '42',
      };
      const evaluate = (env: Record<string, string> = {}) =>
        Object.fromEntries(
          Object.entries(env).map(([name, value]) => {
            assert.ok(!value.includes('${{') || value in expressions, `no stand-in for ${value}`);
            return [name, expressions[value] ?? value];
          }),
        );

      /** The job's steps for `event`, until one fails, as GitHub runs them: the exit code of each. */
      async function runJob(event: string): Promise<Record<string, Run>> {
        const ran: Record<string, Run> = {};
        const base: NodeJS.ProcessEnv = {
          ...process.env,
          // actions/setup-node: Node.js 24 first on the PATH.
          PATH: `${join(ROOT, 'node_modules/.bin')}:${bin}:${process.env.PATH}`,
          GITHUB_STEP_SUMMARY: summary,
          ...evaluate(workflow.jobs.policy.env),
        };
        delete base.NODE_TEST_CONTEXT;
        for (const step of workflow.jobs.policy.steps) {
          if (step.uses) continue; // the checkouts are the repository above; setup-node is the PATH
          const condition = step.if ? /^github\.event_name == '(\w+)'$/.exec(step.if) : null;
          assert.ok(!step.if || condition, `an if the test reads: ${step.if}`);
          if (condition && condition[1] !== event) continue;
          if (step.run!.trim() === 'npm ci --omit=dev --prefix approval-service') {
            // Not reinstalled here: the CLI runs as if only the runtime dependencies were there.
            base.NODE_OPTIONS = `--import ${WITHOUT_DEV}`;
            continue;
          }
          const result = await bash(step.run!, repository, { ...base, ...evaluate(step.env) });
          ran[step.name!] = result;
          if (result.code !== 0) break;
        }
        return ran;
      }

      const pullRequest = await runJob('pull_request');
      assert.deepEqual(Object.keys(pullRequest), ['simulate']);
      assert.equal(pullRequest.simulate!.code, 5, pullRequest.simulate!.stderr);
      assert.equal(readFileSync(join(bin, 'gh.args'), 'utf8'), 'pr comment 42 --body-file simulate.md\n');
      assert.match(
        readFileSync(join(bin, 'gh.body'), 'utf8'),
        /\*\*2 of 3 calls would be decided differently\*\*/,
      );

      const merged = await runJob('push');
      assert.deepEqual(Object.keys(merged), ['apply']);
      assert.equal(merged.apply!.code, 0, merged.apply!.stderr);
      const now = JSON.parse((await remote(['export', '--json'])).stdout) as {
        version: number;
        config: { tools: object[] };
      };
      assert.deepEqual(now.config.tools, [
        { connection: 'SDK', tool: 'read_balance', classification: 'allow' },
      ]);
      assert.match(
        readFileSync(summary, 'utf8'),
        new RegExp(`^Applied: configuration version ${now.version}$`, 'm'),
      );

      // The same merge again, from a file whose version is no longer the configuration's: refused.
      const stale = await runJob('push');
      assert.equal(stale.apply!.code, 4, stale.apply!.stderr);
      assert.match(stale.apply!.stderr, /^approvals: the configuration changed since/m);
    });
  });
}
