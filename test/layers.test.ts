/**
 * The layer check (scripts/check-layers.ts, `npm run check:layers`) on a small tree that breaks the
 * rules (layers, package lists, the published packages under packages/), so that the checker itself cannot pass silently, and on the real tree, which must pass.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, test } from 'node:test';
import { checkLayers, listProblems } from '../scripts/check-layers.ts';

const ROOT = resolve(import.meta.dirname, '..');
const fixture = mkdtempSync(join(tmpdir(), 'layers-'));
after(() => rmSync(fixture, { recursive: true, force: true }));

const files: Record<string, string> = {
  // Broken: the domain reads the store and the file system.
  'src/domain/rules.ts': "import { readFileSync } from 'node:fs';\nimport { one } from '../store/db.ts';\n",
  'src/store/db.ts': 'export const one = 1;\nexport type Sql = unknown;\n',
  'src/store/workspaces.ts': 'export interface Workspace { id: string }\n',
  // Broken: a circle of three services.
  'src/services/a.ts': "import { b } from './b.ts';\nexport const a = () => b;\n",
  'src/services/b.ts': "import { c } from './c.ts';\nexport const b = () => c;\n",
  'src/services/c.ts': "import { a } from './a.ts';\nexport const c = () => a;\n",
  // Fine: a circle of type-only imports.
  'src/services/context.ts': "import type { Use } from './use.ts';\nexport type Context = { use: Use };\n",
  'src/services/use.ts':
    "import type { Context } from './context.ts';\nexport type Use = (ctx: Context) => void;\n",
  // Fine: a shared record type. Broken: the store's port, even as a type.
  'src/app/page.ts':
    "import type { Workspace } from '../store/workspaces.ts';\nimport type { Sql } from '../store/db.ts';\n",
  // Broken: a worker imports the HTTP layer; a test file is not read.
  'src/workers/loop.ts': "export { sendError } from '../http/errors.ts';\n",
  'src/http/errors.ts': 'export const sendError = () => {};\n',
  'src/workers/loop.test.ts': "import { one } from '../store/db.ts';\n",
  // Broken: each layer with a package list imports a package not on it.
  'src/services/server.ts': "import fastify from 'fastify';\n",
  'src/store/cache.ts': "import { createClient } from 'redis';\n",
  'src/workers/pool.ts': "import pg from 'pg';\n",
  'src/web/markdown.ts': "import { marked } from 'marked';\n",
  'src/http/pdf.ts': "import PDFDocument from 'pdfkit';\n",
  'src/app/mail.ts': "import nodemailer from 'nodemailer';\n",
  'src/mcp/sql.ts': "import type { Pool } from 'pg';\n",
  // A published package: its own files, node: modules and what its package.json names are fine; a
  // package it does not name and a file outside it are broken.
  'packages/adapter/package.json': JSON.stringify({ peerDependencies: { ai: '>=6' } }),
  'packages/adapter/src/index.ts':
    "import { tool } from 'ai';\nimport { randomUUID } from 'node:crypto';\nimport { tools } from './tools.ts';\n" +
    "import { z } from 'zod';\nimport { chain } from '../../sdk/src/chain.ts';\n",
  'packages/adapter/src/tools.ts': 'export const tools = [];\n',
  // Broken: the SDK names a dependency.
  'packages/sdk/package.json': JSON.stringify({ dependencies: { zod: '^4' } }),
  'packages/sdk/src/chain.ts': 'export const chain = 1;\n',
};
for (const [path, text] of Object.entries(files)) {
  mkdirSync(dirname(join(fixture, path)), { recursive: true });
  writeFileSync(join(fixture, path), text);
}

test('a tree that breaks the rules fails, with every violation and circle named', () => {
  const report = checkLayers(fixture, []);
  assert.deepEqual(report.violations.map((v) => `${v.from} -> ${v.to}`).sort(), [
    'packages/adapter/src/index.ts -> packages/sdk/src/chain.ts',
    'packages/adapter/src/index.ts -> zod',
    'packages/sdk/package.json -> zod',
    'src/app/mail.ts -> nodemailer',
    'src/app/page.ts -> src/store/db.ts',
    'src/domain/rules.ts -> node:fs',
    'src/domain/rules.ts -> src/store/db.ts',
    'src/http/pdf.ts -> pdfkit',
    'src/mcp/sql.ts -> pg',
    'src/services/server.ts -> fastify',
    'src/store/cache.ts -> redis',
    'src/web/markdown.ts -> marked',
    'src/workers/loop.ts -> src/http/errors.ts',
    'src/workers/pool.ts -> pg',
  ]);
  assert.deepEqual(report.cycles, [
    {
      files: ['src/services/a.ts', 'src/services/b.ts', 'src/services/c.ts'],
      cycle: ['src/services/a.ts', 'src/services/b.ts', 'src/services/c.ts', 'src/services/a.ts'],
    },
  ]);
  const run = spawnSync(process.execPath, [join(ROOT, 'scripts/check-layers.ts'), fixture], {
    encoding: 'utf8',
  });
  assert.equal(run.status, 1, run.stderr);
  assert.match(run.stderr, /^Layers: \d+ problems/);
  assert.match(run.stderr, /domain may not import store/);
  assert.match(run.stderr, /src\/services\/server\.ts imports fastify: services may import only /);
  assert.match(
    run.stderr,
    /packages\/adapter may import only node: modules and what its package\.json names \(ai\)/,
  );
  assert.match(run.stderr, /packages\/adapter may import only its own files/);
  assert.match(run.stderr, /packages\/sdk\/package\.json imports zod: packages\/sdk stays dependency-free/);
  assert.match(run.stderr, /circle of 3 files: src\/services\/a\.ts -> src\/services\/b\.ts/);
});

test('an allow-list entry covers its import, and one that no longer occurs fails', () => {
  const report = checkLayers(fixture, [
    { from: 'src/workers/loop.ts', to: 'src/http/errors.ts', why: 'moving' },
    { from: 'src/workers/loop.ts', to: 'src/store/db.ts', why: 'moved already' },
  ]);
  assert.ok(!report.violations.some((v) => v.from === 'src/workers/loop.ts'));
  assert.deepEqual(report.staleAllowances, ['src/workers/loop.ts -> src/store/db.ts']);
});

test('the real tree follows the rules and has no import circles', () => {
  assert.deepEqual(listProblems(checkLayers(ROOT)), []);
});
