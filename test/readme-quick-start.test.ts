/**
 * Issue 24: the README's quick start runs as written. Its shell block is taken from README.md and run
 * with bash (`set -euo pipefail`) against the service started as `npm start` starts it (its own
 * process, embedded SQLite), in an empty directory, with `npx approvals` meaning this checkout's command.
 * Only the address changes: the block says 127.0.0.1:8080, the test's service has a free port.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { sqlite, type Storage } from './support/backends.ts';
import { NODE, ROOT } from './support/cli.ts';
import { killServerProcesses, type ServerProcess, startServerProcess } from './support/server-process.ts';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const section = readme.slice(readme.indexOf('## Quick start'));
const block = section.match(/```sh\n([\s\S]*?)```/)?.[1];

let storage: Storage;
let server: ServerProcess;
let dir: string;
before(async () => {
  storage = await sqlite.create();
  server = await startServerProcess(storage);
  dir = mkdtempSync(join(tmpdir(), 'quick-start-'));
});
after(async () => {
  await killServerProcesses();
  await storage?.drop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the README's quick start runs as written and gets the answers it promises", () => {
  assert.ok(block, 'README.md has a Quick start with a sh block');
  // `npx approvals` in the checkout runs bin/approvals.js; here, the same with this Node.js.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(
    join(bin, 'approvals'),
    `#!/bin/sh\nexec "${NODE}" "${join(ROOT, 'bin/approvals.js')}" "$@"\n`,
  );
  chmodSync(join(bin, 'approvals'), 0o755);
  const script = `set -euo pipefail\nnpx() { "$@"; }\n${block!.replaceAll('http://127.0.0.1:8080', server.url)}`;
  const run = spawnSync('bash', ['-c', script], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      ...process.env,
      PATH: `${bin}:${dirname(NODE)}:${process.env.PATH}`,
      DATA_DIR: storage.env.DATA_DIR,
      DATABASE_URL: '',
      LOG_LEVEL: 'silent',
      NODE_TEST_CONTEXT: undefined,
    },
  });
  assert.equal(run.status, 0, `exit ${run.status}\n${run.stdout}\n${run.stderr}`);
  const answers = run.stdout;
  assert.match(answers, /"status":"pending"/, 'step 2: an unclassified tool is held');
  assert.match(answers, /"status":"allowed"/, 'step 4: a classified tool is allowed');
  assert.match(answers, /"valid":true/, 'step 5: the chain verifies');
  assert.ok(!/"error"/.test(answers), answers);
});
