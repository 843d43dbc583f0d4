/**
 * What an MCP client is told (decisions.md, amendments, MCP): a tool the upstream does not list gets
 * the upstream's unknown-tool error, makes no hold and pages nobody; a tool the upstream added since
 * it was last listed is found by listing it once more; an upstream that cannot be reached is said to
 * be so by every method, never "method not found".
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { rpcFailure } from './support/http.ts';
import { type ChangingUpstream, startChangingUpstream, startEverything } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const CONFIG = (url: string) => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
mcp_servers:
  - { slug: changing, name: Changing, url: "${url}" }
tools:
  - { connection: Changing, tool: grow, classification: allow }
`;

for (const backend of backends) {
  describe(`MCP answers on ${backend.name}`, { skip: backend.skip, timeout: 60_000 }, () => {
    let t: TestService;
    let upstream: ChangingUpstream;
    const clients: Client[] = [];

    before(async () => {
      upstream = await startChangingUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await t?.close();
      await upstream?.close();
    });

    async function connect(key: string, slug = 'changing') {
      const client = new Client(
        { name: 'mcp-test', version: '1' },
        { versionNegotiation: { mode: 'legacy' } },
      );
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${slug}`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      clients.push(client);
      return client;
    }

    const count = async (sql: string, workspace: Workspace) =>
      Number((await t.service.ctx.db.one<{ n: number }>(sql, [workspace.id]))!.n);

    test('a tool the upstream does not list: its unknown-tool error, no hold, nobody notified', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
      const client = await connect(key);
      const error = await rpcFailure(
        client.callTool({ name: 'delete_everything', arguments: { all: true } }),
      );
      assert.equal(error.code, -32602);
      assert.match(error.message, /Tool not found/);
      assert.ok(!error.message.includes('delete_everything'), 'the name is not repeated');
      assert.equal(await count('SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1', workspace), 0);
      assert.equal(
        await count('SELECT COUNT(*) AS n FROM notifications WHERE workspace_id = $1', workspace),
        0,
      );
      const tools = await t.service.ctx.db.all<{ name: string }>(
        'SELECT name FROM tools WHERE workspace_id = $1 ORDER BY name',
        [workspace.id],
      );
      assert.deepEqual(
        tools.map((tool) => tool.name),
        ['grow'],
        'the refreshed list is registered; the invented name is not',
      );
    });

    test('a tool the upstream added since it was listed is found by listing it again', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
      const client = await connect(key);
      await client.listTools();
      const grown = await client.callTool({ name: 'grow', arguments: {} });
      const added = /now (\d+) tools/.exec(JSON.stringify(grown))![1];
      const name = `grown-${Number(added) - 1}`;
      // Not listed when the proxy last asked: it asks again, finds it, and the rules hold it (new tool).
      const held = (await client.callTool({ name, arguments: {} })) as { content: { text: string }[] };
      assert.equal(JSON.parse(held.content[1]!.text).service.status, 'held');
      assert.equal(await count('SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1', workspace), 2);
    });

    test("a held call, once decided, is told on the session's stream: no polling", async () => {
      const config = CONFIG(upstream.url).replace(
        'tool: grow, classification: allow',
        'tool: grow, classification: approval',
      );
      const { workspace, key } = await t.workspace({ config });
      const client = await connect(key);
      const notices: { logger?: string; data?: { content: { text: string }[]; isError?: boolean } }[] = [];
      client.setNotificationHandler('notifications/message', (notification) => {
        if (notification.params.logger === 'approvals') notices.push(notification.params as never);
      });
      const held = (await client.callTool({ name: 'grow', arguments: {} })) as {
        content: { text: string }[];
      };
      const { reference } = JSON.parse(held.content[1]!.text).service;
      // The client opens its stream (GET) on its own after initializing; a round trip gives it time.
      await client.ping();
      await decideAs(t, workspace.id, reference, 'reject', 'admin@acme.test', 'not now');
      const told = await until('the notice', () => notices[0]);
      assert.equal(told.data!.isError, true);
      const envelope = JSON.parse(told.data!.content[1]!.text).service;
      assert.deepEqual([envelope.reference, envelope.status], [reference, 'denied']);
    });

    test('an upstream that cannot be reached: every method says so, never "method not found"', async () => {
      const everything = await startEverything();
      const config = `members:\n  - { email: admin@acme.test, name: Admin, role: admin }\nmcp_servers:\n  - { slug: down, name: Down, url: "${everything.url}" }\n`;
      const { key } = await t.workspace({ config });
      await everything.stop();
      const client = await connect(key, 'down');
      for (const call of [
        () => client.listTools(),
        () => client.listResources(),
        () => client.readResource({ uri: 'demo://resource/static/document/1' }),
        () => client.listPrompts(),
      ]) {
        const error = await rpcFailure(call());
        assert.equal(error.code, -32000, error.message);
        assert.match(error.message, /cannot be reached/);
      }
      // Back: the session opened during the outage hears that the lists changed, and everything works.
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler('notifications/tools/list_changed', () => resolve()),
      );
      await everything.start();
      try {
        await changed;
        assert.ok((await client.listTools()).tools.some((tool) => tool.name === 'echo'));
        assert.ok((await client.listResources()).resources.length > 0);
      } finally {
        await everything.stop();
      }
    });
  });
}
