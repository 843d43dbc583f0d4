/**
 * Quotas an operator can raise (issue 22): the contract's 120 requests a minute per workspace and bucket
 * and 600 MCP tool calls a minute per key are defaults; API_RATE_LIMIT and MCP_RATE_LIMIT set them per
 * deployment, `approvals workspace limits` per workspace (recorded in the workspace's evidence), and
 * neither the workspace file nor anything a workspace admin can reach changes them.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { setWorkspaceLimits } from '../src/services/workspaces.ts';
import { backends, sqlite, type Storage } from './support/backends.ts';
import { approvals, type Run } from './support/cli.ts';
import { call } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const UNKNOWN_HOLD = `svc_pa_${'A'.repeat(22)}`;

/** One Core API request (an unknown hold: 404, counted in bucket v1). */
const read = (t: TestService, key: string) => call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });

/** One MCP tool call to a server that does not exist (404, but counted first). */
const toolCall = (t: TestService, key: string) =>
  call(t.url, 'POST', '/mcp/none', {
    key,
    body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'any', arguments: {} } },
    headers: { accept: 'application/json, text/event-stream' },
  });

/** Moves the test clock to the start of a fresh window, so a run of calls falls into one window. */
const freshWindow = (t: TestService) => t.clock.advance(60_000 - (t.clock.now() % 60_000));

function json(run: Run): any {
  assert.equal(run.code, 0, `exit code 0 expected; stderr: ${run.stderr}`);
  assert.equal(run.stderr, '');
  return JSON.parse(run.stdout);
}

for (const backend of backends) {
  describe(`workspace limits on ${backend.name}`, { skip: backend.skip, timeout: 120_000 }, () => {
    let storage: Storage;
    let t: TestService;
    before(async () => {
      storage = await backend.create();
      t = await startTestService(backend, { storage });
    });
    after(() => t?.close());

    const limits = (slug: string, ...flags: string[]) =>
      approvals(storage, ['workspace', 'limits', slug, ...flags, '--json']);
    const entries = async (slug: string) =>
      (await approvals(storage, ['evidence', 'export', '--workspace', slug])).stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.type !== undefined);

    test('by default: 120 a minute per bucket and 600 tool calls per key, and the headers say so', async () => {
      const { workspace, key } = await t.workspace();
      freshWindow(t);
      assert.equal((await read(t, key)).headers.get('ratelimit-limit'), '120');
      assert.equal((await toolCall(t, key)).headers.get('ratelimit-limit'), '600');
      assert.deepEqual(await limits(workspace.slug).then(json), {
        slug: workspace.slug,
        v1: { limit: 120, source: 'deployment' },
        mcp: { limit: 600, source: 'deployment' },
      });
    });

    test('an override raises one workspace and not another, at once, and is recorded as evidence', async () => {
      const raised = await t.workspace();
      const other = await t.workspace();
      const set = json(await limits(raised.workspace.slug, '--v1', '6000', '--mcp', '900'));
      assert.deepEqual(set, {
        slug: raised.workspace.slug,
        v1: { limit: 6000, source: 'workspace' },
        mcp: { limit: 900, source: 'workspace' },
        changed: true,
      });

      // The running service uses it from the next request on: past 120 in one window, still answered.
      freshWindow(t);
      let last;
      for (let i = 0; i < 125; i++) last = await read(t, raised.key);
      assert.equal(last!.status, 404);
      assert.equal(last!.headers.get('ratelimit-limit'), '6000');
      assert.equal(last!.headers.get('ratelimit-remaining'), String(6000 - 125));
      for (const bucket of ['/api/v1/audit/verify'])
        assert.equal(
          (await call(t.url, 'GET', bucket, { key: raised.key })).headers.get('ratelimit-limit'),
          '6000',
        );
      const wait = await call(t.url, 'POST', `/api/v1/holds/${UNKNOWN_HOLD}/wait`, { key: raised.key });
      assert.equal(wait.headers.get('ratelimit-limit'), '6000', 'every Core API bucket');
      assert.equal((await toolCall(t, raised.key)).headers.get('ratelimit-limit'), '900');

      // Another workspace keeps the deployment's quotas.
      const answer = await read(t, other.key);
      assert.equal(answer.headers.get('ratelimit-limit'), '120');
      assert.equal((await toolCall(t, other.key)).headers.get('ratelimit-limit'), '600');
      assert.equal(json(await limits(other.workspace.slug)).v1.source, 'deployment');

      // The change is in the raised workspace's chain, with the old and new values, and the chain holds.
      const changes = (await entries(raised.workspace.slug)).filter(
        (e) => e.type === 'workspace.limits_changed',
      );
      assert.deepEqual(
        changes.map((e) => e.data),
        [{ v1: { from: null, to: 6000 }, mcp: { from: null, to: 900 } }],
      );
      assert.equal(
        (await entries(other.workspace.slug)).filter((e) => e.type === 'workspace.limits_changed').length,
        0,
      );
      const verified = await call(t.url, 'GET', '/api/v1/audit/verify', { key: raised.key });
      assert.equal(verified.body.valid, true);

      // Setting what is set changes nothing and records nothing.
      assert.equal(json(await limits(raised.workspace.slug, '--v1', '6000')).changed, false);
      assert.equal(
        (await entries(raised.workspace.slug)).filter((e) => e.type === 'workspace.limits_changed').length,
        1,
      );
    });

    test('an override below the default holds a workspace to it; `default` goes back to the deployment', async () => {
      const { workspace, key } = await t.workspace();
      json(await limits(workspace.slug, '--v1', '3', '--mcp', '2'));
      freshWindow(t);
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await read(t, key)).status);
      assert.deepEqual(statuses, [404, 404, 404, 429]);
      const calls = [];
      for (let i = 0; i < 3; i++) calls.push((await toolCall(t, key)).status);
      assert.deepEqual(calls, [404, 404, 429]);

      const back = json(await limits(workspace.slug, '--v1', 'default'));
      assert.deepEqual(back.v1, { limit: 120, source: 'deployment' });
      assert.deepEqual(back.mcp, { limit: 2, source: 'workspace' }, 'a limit not named stays');
      const after = await read(t, key);
      assert.equal(after.status, 404, 'the same window, now under the default quota');
      assert.equal(after.headers.get('ratelimit-limit'), '120');
      json(await limits(workspace.slug, '--mcp', 'default'));
      assert.equal((await toolCall(t, key)).headers.get('ratelimit-limit'), '600');
      const changes = (await entries(workspace.slug)).filter((e) => e.type === 'workspace.limits_changed');
      assert.deepEqual(
        changes.map((e) => e.data),
        [
          { v1: { from: null, to: 3 }, mcp: { from: null, to: 2 } },
          { v1: { from: 3, to: null } },
          { mcp: { from: 2, to: null } },
        ],
      );
    });

    test('bad values are refused with the reason, and change nothing', async () => {
      const { workspace } = await t.workspace();
      json(await limits(workspace.slug, '--v1', '500'));
      const before = await entries(workspace.slug);
      const cases: string[][] = [
        ['--v1', 'lots'],
        ['--v1', '0'],
        ['--v1', '1.5'],
        ['--v1', '1e3'],
        ['--v1=-5'],
        ['--v1', ''],
        ['--v1', '1000001'],
        ['--v1', '99999999999999999999'],
        ['--mcp', '0'],
        // One bad value refuses the whole command: the good one is not applied either.
        ['--v1', '700', '--mcp', 'unlimited'],
      ];
      const runs = await Promise.all(
        cases.map((flags) => approvals(storage, ['workspace', 'limits', workspace.slug, ...flags, '--json'])),
      );
      for (const [index, run] of runs.entries()) {
        assert.equal(run.code, 2, `${cases[index]!.join(' ')}: ${run.stderr}`);
        assert.equal(run.stdout, '');
        assert.match(
          run.stderr.split('\n')[0]!,
          /^approvals: --(v1|mcp) must be a whole number from 1 to 1000000, or default$/,
        );
      }
      const missing = await approvals(storage, ['workspace', 'limits', '--v1', '10']);
      assert.equal(missing.code, 2);
      assert.match(missing.stderr, /workspace limits needs a slug/);
      const unknown = await approvals(storage, ['workspace', 'limits', 'no-such-workspace', '--v1', '10']);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /^approvals: workspace \S+ not found in the /);

      assert.deepEqual(json(await limits(workspace.slug)).v1, { limit: 500, source: 'workspace' });
      assert.equal((await entries(workspace.slug)).length, before.length, 'no evidence entry');
      // The service refuses out-of-range numbers too, whoever calls it.
      await assert.rejects(
        setWorkspaceLimits(t.service.ctx, workspace, { v1: 0 }),
        /v1: must be a whole number/,
      );
      await assert.rejects(
        setWorkspaceLimits(t.service.ctx, workspace, { mcp: 2.5 }),
        /mcp: must be a whole number/,
      );
    });

    test('the workspace file cannot set limits: apply with `limits` is refused and changes nothing', async () => {
      const { workspace, key } = await t.workspace();
      const before = await entries(workspace.slug);
      const file = join(storage.env.DATA_DIR, `limits-${workspace.slug}.yaml`);
      writeFileSync(file, 'name: Greedy\nlimits: { v1: 100000, mcp: 100000 }\n');
      const run = await approvals(storage, ['apply', '--workspace', workspace.slug, '-f', file, '--json']);
      assert.equal(run.code, 1);
      assert.match(run.stderr, /^approvals: line 1: \(file\): unknown field: "limits"\n$/);
      assert.equal((await entries(workspace.slug)).length, before.length);
      assert.equal((await read(t, key)).headers.get('ratelimit-limit'), '120');
      // Nor does `export` (what an admin gets back to edit and re-apply) carry them.
      json(await limits(workspace.slug, '--v1', '5000'));
      const exported = json(
        await approvals(storage, ['export', '--workspace', workspace.slug, '--json']),
      ).config;
      assert.equal('limits' in exported, false);
      assert.equal(JSON.stringify(exported).includes('5000'), false);
    });
  });
}

describe('API_RATE_LIMIT: the Core API quota of a deployment', { skip: sqlite.skip }, () => {
  test('raises every workspace; a workspace override still wins; the command shows it as the default', async () => {
    const t = await startTestService(sqlite, { env: { API_RATE_LIMIT: '130', MCP_RATE_LIMIT: '700' } });
    try {
      const { workspace, key } = await t.workspace();
      const other = await t.workspace();
      freshWindow(t);
      const statuses = [];
      for (let i = 0; i < 131; i++) statuses.push((await read(t, key)).status);
      assert.equal(statuses.indexOf(429), 130, 'the 131st request is over the quota');
      const last = await read(t, other.key);
      assert.equal(last.headers.get('ratelimit-limit'), '130');
      assert.equal((await toolCall(t, key)).headers.get('ratelimit-limit'), '700');

      const settings = { API_RATE_LIMIT: '130', MCP_RATE_LIMIT: '700' };
      const shown = json(
        await approvals(t.storage, ['workspace', 'limits', workspace.slug, '--json'], settings),
      );
      assert.deepEqual(shown.v1, { limit: 130, source: 'deployment' });
      assert.deepEqual(shown.mcp, { limit: 700, source: 'deployment' });
      json(
        await approvals(
          t.storage,
          ['workspace', 'limits', other.workspace.slug, '--v1', '20', '--json'],
          settings,
        ),
      );
      assert.equal((await read(t, other.key)).headers.get('ratelimit-limit'), '20');
    } finally {
      await t.close();
    }
  });

  test('must be a whole number from 1 to 1000000', () => {
    for (const value of ['0', '-1', '1.5', 'many', '1000001'])
      assert.throws(() => loadConfig({ API_RATE_LIMIT: value }), /API_RATE_LIMIT/, value);
    assert.equal(loadConfig({ API_RATE_LIMIT: '' }).apiRateLimit, 120, 'empty: the default');
    assert.equal(loadConfig({ API_RATE_LIMIT: '1000000' }).apiRateLimit, 1_000_000);
  });
});

const redisUrl = process.env.TEST_REDIS_URL;

describe(
  'workspace limits counted in Redis',
  { skip: redisUrl ? undefined : 'TEST_REDIS_URL is not set' },
  () => {
    test('an override applies to the windows kept in Redis, shared by two instances', async () => {
      const first = await startTestService(sqlite, { env: { REDIS_URL: redisUrl! } });
      const second = await startTestService(sqlite, {
        storage: first.storage,
        clock: first.clock,
        env: { REDIS_URL: redisUrl! },
      });
      try {
        const { workspace, key } = await first.workspace();
        await setWorkspaceLimits(first.service.ctx, workspace, { v1: 4 });
        freshWindow(first);
        const statuses = [];
        for (let i = 0; i < 5; i++) statuses.push((await read(i % 2 ? second : first, key)).status);
        assert.deepEqual(statuses, [404, 404, 404, 404, 429]);
        assert.equal((await read(second, key)).headers.get('ratelimit-limit'), '4');
      } finally {
        await second.stop();
        await first.close();
      }
    });
  },
);
