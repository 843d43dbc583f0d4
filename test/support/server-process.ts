/** The service as its own process (as `npm start` runs it), for tests that kill it with SIGKILL. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Storage } from './backends.ts';
import { NODE, ROOT } from './cli.ts';
import { freePort } from './mcp-upstream.ts';

/**
 * Node.js's arguments as `npm start` gives them (package.json's start script, `exec node <args>`): its
 * flags, then src/main.ts. Benchmarks and tests run the service as users do, flags included.
 */
export const SERVICE_ARGS = (() => {
  const start: string = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start;
  const args = /^exec node (.*src\/main\.ts)$/.exec(start)?.[1];
  if (!args) throw new Error(`package.json's start script is not \`exec node … src/main.ts\`: ${start}`);
  return args.split(/\s+/);
})();

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => string;
}

/** Every process started here; `killServerProcesses` ends them all, whatever happened. */
const children = new Set<ChildProcess>();

export async function killServerProcesses() {
  const exits = [...children].map((child) => new Promise((resolve) => child.once('exit', resolve)));
  for (const child of children) child.kill('SIGKILL');
  await Promise.all(exits);
}

/** The settings that point a process at `storage` (empty DATABASE_URL: SQLite under DATA_DIR). */
export const storageSettings = (storage: Storage) => ({
  DATA_DIR: storage.env.DATA_DIR,
  DATABASE_URL: storage.env.DATABASE_URL ?? '',
});

/** A service process on `storage` with `settings`, on a free port, once /healthz answers. */
export async function startServerProcess(
  storage: Storage,
  settings: Record<string, string> = {},
  attempt = 1,
): Promise<ServerProcess> {
  const port = await freePort();
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...storageSettings(storage),
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_URL: '',
    LOG_LEVEL: 'silent',
    ...settings,
  };
  delete env.NODE_TEST_CONTEXT;
  const child = spawn(NODE, SERVICE_ARGS, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      // Someone took the port between our probe and the start: try another one.
      if (attempt < 3 && /EADDRINUSE/.test(output)) return startServerProcess(storage, settings, attempt + 1);
      throw new Error(`server exited before it was healthy (${child.exitCode}): ${output}`);
    }
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`server not healthy within 20 s: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { child, url, exited, output: () => output };
}
