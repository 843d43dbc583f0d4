/**
 * The key file made under DATA_DIR when SECRETS_KEY is not set: made once, whoever starts first. Two
 * commands started at once on a new directory once raced (one read the other's key file before a byte
 * of it was written, and failed). The window is narrow: this
 * starts eight processes at once, eight times, a stress test that did not catch the race on this
 * machine with the code before (the two commands of test/secrets.test.ts hit it once, on CI).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadSealer } from './secrets.ts';

const SEALER = new URL('./secrets.ts', import.meta.url).href;

/** A process of its own that loads the sealer on `dataDir` and prints a text sealed with it. */
function sealInProcess(dataDir: string, text: string): Promise<string> {
  const script = `const { loadSealer } = await import(${JSON.stringify(SEALER)});
process.stdout.write(loadSealer({ dataDir: ${JSON.stringify(dataDir)} }).seal(${JSON.stringify(text)}));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`exit ${code}: ${err.slice(-500)}`)),
    );
  });
}

test('processes that start at once on a new data directory make one key and all use it', async () => {
  for (let round = 0; round < 8; round++) {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'approvals-secrets-')), 'data');
    try {
      const sealed = await Promise.all(
        Array.from({ length: 8 }, (_, i) => sealInProcess(dataDir, `text-${i}`)),
      );
      const sealer = loadSealer({ dataDir });
      assert.deepEqual(
        sealed.map((value) => sealer.open(value)),
        sealed.map((_, i) => `text-${i}`),
      );
      // Nothing is left beside the key.
      assert.deepEqual(readdirSync(dataDir), ['secrets.key']);
    } finally {
      rmSync(join(dataDir, '..'), { recursive: true, force: true });
    }
  }
});
