/**
 * A package README's example run as a user runs it: the script in a process of its own with the given
 * settings. Its call is held; the admin approves it once stored; the example must then exit 0.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decideAs, type TestService } from './service.ts';
import { until } from './wait.ts';

/** Runs `script` (JavaScript); `holdKey` is its hold's idempotency key, from the process id. */
export async function runApprovedExample(
  t: TestService,
  script: string,
  env: Record<string, string>,
  holdKey: (pid: number) => string,
): Promise<{ out: string; holdId: string }> {
  const file = join(mkdtempSync(join(tmpdir(), 'readme-example-')), 'example.mjs');
  writeFileSync(file, script);
  const child = spawn(process.execPath, [file], {
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
        "SELECT id, workspace_id FROM holds WHERE idempotency_key = $1 AND status = 'pending'",
        [holdKey(child.pid!)],
      )) ?? undefined,
  );
  await decideAs(t, hold.workspace_id, hold.id, 'approve');
  assert.equal(await exited, 0, err);
  return { out, holdId: hold.id };
}
