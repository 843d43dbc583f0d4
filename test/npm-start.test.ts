/**
 * Issue 24: `npm start` stopped with SIGTERM left `node src/main.ts` running. npm runs the script in a
 * shell and signals that shell, which died and left the service behind, still holding its port. The
 * script now `exec`s Node.js, so the signal reaches the service, which shuts down as it should.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './support/cli.ts';
import { freePort } from './support/mcp-upstream.ts';
import { until } from './support/wait.ts';

test('SIGTERM to `npm start` stops the service', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'npm-start-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/healthz`;
  const env: Record<string, string | undefined> = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    DATABASE_URL: '',
    PUBLIC_URL: '',
    LOG_LEVEL: 'silent',
  };
  delete env.NODE_TEST_CONTEXT;
  const npm = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, stdio: 'ignore' });
  const answers = () =>
    fetch(url).then(
      (response) => response.status === 200,
      () => false,
    );
  try {
    await until('the service to answer /healthz', async () => ((await answers()) ? true : undefined), 20_000);
    npm.kill('SIGTERM');
    await once(npm, 'exit');
    // Shutting down closes the listener; a service left behind would keep answering.
    await until('the service to stop answering after SIGTERM to npm', async () =>
      (await answers()) ? undefined : true,
    );
  } finally {
    npm.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
