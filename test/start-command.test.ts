/**
 * The image starts the service as `npm start` does, Node.js flags included (`--max-semi-space-size`
 * bounds the memory a report takes, see docs/operations.md): one command, written in two places.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT } from './support/cli.ts';
import { SERVICE_ARGS } from './support/server-process.ts';

test("the Dockerfile's CMD runs what package.json's start script runs", () => {
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
  assert.ok(cmd, 'the Dockerfile has a CMD in JSON form');
  assert.deepEqual(JSON.parse(cmd), ['node', ...SERVICE_ARGS]);
});
