/**
 * The MCP conformance suite (`@modelcontextprotocol/conformance`) against a server written for its
 * scenarios (test/support/conformance-server.ts): every server scenario passes directly, and every one
 * passes through the proxy too, sampling and elicitation included, which that server asks for on its
 * standalone GET stream, related to no call. No expected failures: a scenario that fails through the
 * proxy is a proxy defect. docs/mcp-conformance.md has what the suite checks.
 *
 * `MCP_CONFORMANCE_KEEP=1` keeps the suite's checks.json files (the path is in the test's diagnostics).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { CLIENT_FEATURES } from '../src/mcp/upstream.ts';
import { sqlite } from './support/backends.ts';
import { startConformanceServer } from './support/conformance-server.ts';
import {
  compareRuns,
  CONFORMANCE,
  runNode,
  scenarioOutcomes,
  startKeyRelay,
} from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';

/** The scenarios of the suite's default (`active`) set in v0.1.16. */
const SCENARIOS = 30;

/** The checks that failed or warned in a run, one line each, for a failure message. */
function failedChecks(dir: string): string {
  return readdirSync(dir)
    .flatMap((entry) => {
      const file = join(dir, entry, 'checks.json');
      if (!existsSync(file)) return [`${entry}: no checks.json`];
      const checks = JSON.parse(readFileSync(file, 'utf8')) as {
        id: string;
        status: string;
        errorMessage?: string;
      }[];
      return checks
        .filter((check) => check.status === 'FAILURE' || check.status === 'WARNING')
        .map((check) => `${entry}: ${check.id} ${check.status}: ${check.errorMessage ?? ''}`);
    })
    .join('\n');
}

/** Runs the suite's server scenarios against `url`, its results in `dir`. */
function runSuite(url: string, dir: string) {
  return runNode([CONFORMANCE, 'server', '--url', url, '-o', dir], {}, 120_000);
}

describe('MCP conformance suite: every server scenario, directly and through the proxy', () => {
  let upstream: Awaited<ReturnType<typeof startConformanceServer>>;
  let t: TestService;
  let relay: { url: string; server: http.Server };
  const scratch = mkdtempSync(join(tmpdir(), 'approvals-mcp-conformance-'));
  const directDir = join(scratch, 'direct');
  const proxyDir = join(scratch, 'proxy');

  before(async () => {
    upstream = await startConformanceServer();
    // Its tools, so the workspace can classify every one allow up front (a new tool is held).
    const client = new Client(
      { name: 'mcp-conformance-test', version: '1' },
      { capabilities: CLIENT_FEATURES },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));
    const tools = (await client.listTools()).tools.map((tool) => tool.name);
    await client.close();

    t = await startTestService(sqlite, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    const config = {
      members: [{ email: 'admin@acme.test', name: 'Admin', role: 'admin' }],
      mcp_servers: [{ slug: 'conformance', name: 'Conformance', url: upstream.url }],
      tools: tools.map((tool) => ({ connection: 'Conformance', tool, classification: 'allow' })),
    };
    const { key } = await t.workspace({ config: JSON.stringify(config) });
    // The suite cannot send the API key: the relay adds it (docs/mcp-conformance.md).
    relay = await startKeyRelay(`${t.url}/mcp/conformance`, key);
  });

  after(async () => {
    if (relay) {
      relay.server.closeAllConnections();
      await new Promise<void>((resolve) => relay.server.close(() => resolve()));
    }
    await t?.close();
    await upstream?.close();
    if (!process.env.MCP_CONFORMANCE_KEEP) rmSync(scratch, { recursive: true, force: true });
  });

  test('directly: every scenario passes', async (context) => {
    const run = await runSuite(upstream.url, directDir);
    context.diagnostic(scratch);
    const directly = scenarioOutcomes(directDir);
    assert.ok(directly.size >= SCENARIOS, `the suite ran ${directly.size} scenarios`);
    assert.deepEqual(
      [...directly].filter(([, outcome]) => outcome !== 'pass'),
      [],
      failedChecks(directDir),
    );
    assert.equal(run.code, 0, run.stdout.slice(-3000));
  });

  test('through the proxy: every scenario passes, the same ones as directly', async (context) => {
    const run = await runSuite(relay.url, proxyDir);
    const { directly, through, table } = compareRuns(directDir, proxyDir);
    context.diagnostic(`${scratch}\n${table}`);
    assert.ok(through.size >= SCENARIOS, `the suite ran ${through.size} scenarios through the proxy`);
    assert.deepEqual([...through.keys()].sort(), [...directly.keys()].sort());
    assert.deepEqual(
      [...through].filter(([, outcome]) => outcome !== 'pass'),
      [],
      failedChecks(proxyDir),
    );
    assert.equal(run.code, 0, run.stdout.slice(-3000));
  });
});
