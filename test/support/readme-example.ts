/**
 * A package README's example run as a user runs it: saved as `example.mjs` in a project made by
 * `npm init -y` (CommonJS by default), with our packages installed from their `npm pack` tarballs and
 * the frameworks from this checkout, run on the machine's own Node.js (v20 here, as most users'
 * would be) with the given settings. Its call is held; the admin approves it once stored; the example
 * must then exit 0.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { NODE, ROOT } from './cli.ts';
import { decideAs, type TestService } from './service.ts';
import { until } from './wait.ts';

/** The machine's own Node.js, as most users' would be, else the project's. */
export const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => existsSync(path)) ?? NODE;

const PACKAGES = ['sdk', 'ai-sdk', 'openai-agents', 'langchain'];
/** What the examples import besides our packages, as a user's `npm install` would bring them. */
const FRAMEWORKS = ['ai', '@openai/agents', 'langchain', '@langchain/core', '@langchain/langgraph', 'zod'];

let project: Promise<string> | undefined;

/** The consumer project, made once per test file. */
export function consumerProject(): Promise<string> {
  project ??= (async () => {
    const run = promisify(execFile);
    const dir = mkdtempSync(join(tmpdir(), 'readme-example-'));
    // npm runs each package's prepack build (tsc from the project's node_modules/.bin).
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH}`,
    };
    delete env.NODE_TEST_CONTEXT;
    await run('npm', ['init', '-y'], { cwd: dir, env });
    const tarballs: string[] = [];
    for (const name of PACKAGES) {
      const out = await run('npm', ['pack', '--json', '--pack-destination', dir], {
        cwd: join(ROOT, 'packages', name),
        env,
      });
      tarballs.push(join(dir, (JSON.parse(out.stdout) as [{ filename: string }])[0].filename));
    }
    await run('npm', ['install', ...tarballs, '--offline', '--legacy-peer-deps', '--no-audit', '--no-fund'], {
      cwd: dir,
      env,
    });
    for (const name of FRAMEWORKS) {
      mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name));
    }
    return dir;
  })();
  return project;
}

/**
 * Runs `script` (JavaScript); `holdKey` is its hold's idempotency key, from the process id, as a SQL
 * LIKE pattern (`%` for a part the script does not know beforehand, such as a LangGraph interrupt id).
 */
export async function runApprovedExample(
  t: TestService,
  script: string,
  env: Record<string, string>,
  holdKey: (pid: number) => string,
): Promise<{ out: string; holdId: string }> {
  const dir = await consumerProject();
  const file = join(dir, 'example.mjs');
  writeFileSync(file, script);
  const child = spawn(SYSTEM_NODE, [file], {
    cwd: dir,
    env: { ...process.env, ...env, NODE_TEST_CONTEXT: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  const hold = await until(
    'the example to hold its call',
    async () =>
      (await t.service.ctx.db.one<{ id: string; workspace_id: string }>(
        "SELECT id, workspace_id FROM holds WHERE idempotency_key LIKE $1 AND status = 'pending'",
        [holdKey(child.pid!)],
      )) ?? undefined,
  );
  await decideAs(t, hold.workspace_id, hold.id, 'approve');
  assert.equal(await exited, 0, err);
  return { out, holdId: hold.id };
}
