/**
 * Long calls and impatient clients (issue 40): a client that asked for progress hears the proxy's own
 * while an upstream call says nothing, so a client that resets its timeout on progress (the SDK's
 * `resetTimeoutOnProgress`; its default timeout is 60 s) waits for a call longer than that timeout.
 * The values it sees always increase, the upstream's own progress included. Here the client's
 * timeout is 1 s, the proxy's silence 200 ms, the call 3 s.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';
import { silentCallProgress } from '../src/mcp/call-progress.ts';
import { backends } from './support/backends.ts';
import { type SlowUpstream, startSlowUpstream } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = (url: string) => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
mcp_servers:
  - { slug: slow, name: Slow, url: "${url}" }
tools:
  - { connection: Slow, tool: slow, classification: allow }
`;

type Heard = { progress: number; total?: number; message?: string };

for (const backend of backends) {
  describe(`silent upstream calls on ${backend.name}`, { skip: backend.skip, timeout: 60_000 }, () => {
    let t: TestService;
    let slow: SlowUpstream;
    const clients: { close(): Promise<void> }[] = [];
    const usual = silentCallProgress.afterMs;

    before(async () => {
      silentCallProgress.afterMs = 200;
      slow = await startSlowUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      silentCallProgress.afterMs = usual;
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await t?.close();
      await slow?.close();
    });

    /**
     * A call with a 1 s timeout reset by progress, and the progress its client heard: a v1 SDK client
     * (a 2025-era session's call, answered directly), or a v2 one speaking 2026-07-28 (through the SDK).
     */
    async function impatientCall(label: string, upstreamProgress: boolean, sdk: 'v1' | 'v2' = 'v1') {
      const { key } = await t.workspace({ config: CONFIG(slow.url) });
      const url = new URL(`${t.url}/mcp/slow`);
      const requestInit = { headers: { Authorization: `Bearer ${key}` } };
      const heard: Heard[] = [];
      const params = { name: 'slow', arguments: { label, seconds: 3, progress: upstreamProgress } };
      const options = {
        timeout: 1000,
        resetTimeoutOnProgress: true,
        onprogress: (progress: Heard) => void heard.push(progress),
      };
      if (sdk === 'v2') {
        const client = new ClientV2(
          { name: 'impatient', version: '2' },
          { versionNegotiation: { mode: 'auto' } },
        );
        await client.connect(new TransportV2(url, { requestInit }));
        clients.push(client);
        return { result: await client.callTool(params, options), heard };
      }
      const client = new Client({ name: 'impatient', version: '1' });
      await client.connect(new StreamableHTTPClientTransport(url, { requestInit }));
      clients.push(client);
      return { result: await client.callTool(params, undefined, options), heard };
    }

    const increasing = (values: number[]) => values.every((value, i) => i === 0 || value > values[i - 1]!);

    test('a 3 s call that sends no progress completes for a client whose timeout is 1 s', async () => {
      const { result, heard } = await impatientCall('silent', false);
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 3 s' }]);
      assert.ok(heard.length >= 3, `heard ${heard.length} progress notifications`);
      assert.ok(increasing(heard.map((p) => p.progress)), JSON.stringify(heard));
      assert.match(heard[0]!.message ?? '', /still waiting/i);
      assert.equal(slow.call('silent')?.ended, 'answered', 'never cancelled upstream');
    });

    test("the upstream's own progress goes through between the proxy's, the values always increasing", async () => {
      const { result, heard } = await impatientCall('talking', true);
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 3 s' }]);
      const values = heard.map((p) => p.progress);
      assert.ok(increasing(values), JSON.stringify(values));
      assert.ok(values.includes(1) && values.includes(2), `the upstream's own: ${JSON.stringify(values)}`);
    });

    test('a 2026-07-28 client of the v2 SDK hears the same', async () => {
      const { result, heard } = await impatientCall('stateless', false, 'v2');
      assert.deepEqual(result.content, [{ type: 'text', text: 'slept 3 s' }]);
      assert.ok(heard.length >= 3 && increasing(heard.map((p) => p.progress)), JSON.stringify(heard));
    });
  });
}
