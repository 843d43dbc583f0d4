/** The `approvals` command run for real, as a subprocess, on a given storage. */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Storage } from './backends.ts';

export const ROOT = new URL('../..', import.meta.url).pathname;
export const NODE = join(ROOT, 'node_modules/.bin/node');
const BIN = join(ROOT, 'bin/approvals.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `approvals …` on the given storage (with extra settings); never rejects on a non-zero exit. */
export function approvals(
  storage: Storage,
  args: string[],
  settings: Record<string, string> = {},
): Promise<Run> {
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...settings,
    DATA_DIR: storage.env.DATA_DIR,
    // Empty means "not set": SQLite under DATA_DIR.
    DATABASE_URL: storage.env.DATABASE_URL ?? '',
    LOG_LEVEL: 'silent',
  };
  delete env.NODE_TEST_CONTEXT;
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [BIN, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
