/**
 * One 2025-era MCP session whose requests land on different instances on one PostgreSQL: a
 * cancellation sent to one instance stops the call running on another, a resource update reaches
 * the session's stream on another instance than the one that subscribed, and a log level set on one
 * instance filters the stream open on another.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getHold } from '../src/services/read-hold.ts';
import { postgres, type Storage } from './support/backends.ts';
import {
  type EverythingUpstream,
  type RecordingUpstream,
  startEverything,
  startRecordingUpstream,
} from './support/mcp-upstream.ts';
import { watchingStream } from './support/proxy-client.ts';
import { caughtUp, startTestService, type TestService } from './support/service.ts';
import { settles, until } from './support/wait.ts';

/** Which instance answers a request: by HTTP method and JSON-RPC method. */
type Route = (httpMethod: string, rpcMethod: string | undefined) => TestService;

describe('MCP sessions across instances on one PostgreSQL', { skip: postgres.skip }, () => {
  let storage: Storage;
  let a: TestService;
  let b: TestService;
  let everything: EverythingUpstream;
  let recorder: RecordingUpstream;
  let key: string;
  let workspaceId: string;
  const clients: Client[] = [];

  before(async () => {
    [everything, recorder] = await Promise.all([startEverything(), startRecordingUpstream()]);
    storage = await postgres.create();
    const env = { ALLOW_PRIVATE_TARGETS: 'true' };
    a = await startTestService(postgres, { storage, env });
    b = await startTestService(postgres, { storage, env });
    const created = await a.workspace({
      config:
        'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
        'mcp_servers:\n' +
        `  - { slug: every, name: Everything, url: "${everything.url}" }\n` +
        `  - { slug: rec, name: Recorder, url: "${recorder.url}" }\n` +
        'tools:\n' +
        '  - { connection: Everything, tool: toggle-simulated-logging, classification: allow }\n' +
        '  - { connection: Everything, tool: toggle-subscriber-updates, classification: allow }\n' +
        '  - { connection: Recorder, tool: wait, classification: allow }\n',
    });
    key = created.key;
    workspaceId = created.workspace.id;
  });
  after(async () => {
    try {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await a?.stop();
      await b?.stop();
      await storage?.drop();
    } finally {
      await Promise.all([everything?.stop(), recorder?.close()]);
    }
  });

  /** A 2025-era client whose requests go where `route` sends them, and when its GET stream is open. */
  async function connect(slug: string, route: Route) {
    const client = new Client(
      { name: 'scale-out-test', version: '1' },
      { versionNegotiation: { mode: 'legacy' } },
    );
    const { fetch: watched, streamOpen } = watchingStream((url, init) => {
      const rpc =
        typeof init?.body === 'string' ? (JSON.parse(init.body) as { method?: string }).method : undefined;
      const target = new URL(String(url));
      target.host = new URL(route(init?.method ?? 'GET', rpc).url).host;
      return fetch(target, init);
    });
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp/${slug}`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
      fetch: watched,
    });
    await client.connect(transport);
    clients.push(client);
    return Object.assign(client, { streamOpen: () => settles('the GET stream to open', streamOpen) });
  }

  test('a cancellation sent to one instance stops the call running on another', async () => {
    const client = await connect('rec', (_http, rpc) => (rpc === 'notifications/cancelled' ? b : a));
    const callsBefore = recorder.calls.length;
    const abort = new AbortController();
    const call = client.callTool({ name: 'wait', arguments: {} }, { signal: abort.signal });
    await until('the call upstream', () => (recorder.calls.length > callsBefore ? true : undefined));
    const upstreamCall = recorder.requests.findLast(
      (request) => request.body?.method === 'tools/call' && request.body.params?.name === 'wait',
    )!;
    abort.abort();
    await assert.rejects(call);
    await until('the cancellation upstream', () =>
      recorder.requests.find(
        (request) =>
          request.body?.method === 'notifications/cancelled' &&
          request.body.params?.requestId === upstreamCall.body!.id,
      ),
    );
    const hold = await until('the execution record', async () => {
      const row = await a.service.ctx.db.one<{ id: string }>(
        "SELECT id FROM holds WHERE workspace_id = $1 AND tool_name = 'wait'",
        [workspaceId],
      );
      const found = row && (await getHold(a.service.ctx, workspaceId, row.id));
      return found?.execution?.status === 'failed' ? found : undefined;
    });
    assert.equal((hold.execution!.outcome as { message: string }).message, 'The client cancelled the call');
  });

  test("a resource update reaches the session's stream on another instance than the subscription", async () => {
    const updates: string[] = [];
    // The stream is on A; everything else, the subscription and the calls, on B.
    const client = await connect('every', (http) => (http === 'GET' ? a : b));
    client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
    await client.streamOpen();
    const uri = 'demo://resource/static/document/architecture.md';
    await client.subscribeResource({ uri });
    await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    try {
      await until('a resource update', () => (updates.length > 0 ? true : undefined), 15_000);
    } finally {
      await client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
    }
    assert.equal(updates[0], uri);
    await client.unsubscribeResource({ uri });
  });

  test('a log level set on one instance filters the stream open on another', async () => {
    type Log = { level: string; data: unknown };
    const quiet: Log[] = [];
    const chatty: Log[] = [];
    // Both streams and the logging upstream connection are on A; only the level is set on B.
    const quietClient = await connect('every', (_http, rpc) => (rpc === 'logging/setLevel' ? b : a));
    quietClient.setNotificationHandler('notifications/message', (n) => void quiet.push(n.params));
    const chattyClient = await connect('every', () => a);
    chattyClient.setNotificationHandler('notifications/message', (n) => void chatty.push(n.params));
    await Promise.all([quietClient.streamOpen(), chattyClient.streamOpen()]);
    await quietClient.setLoggingLevel('emergency');
    // B has told A of the new level (in order, before a marker sent after it).
    await caughtUp(b, a, workspaceId);
    // What the server said before the level was in force (its note on the client's roots, sent when a
    // session starts, at a moment of its own) is not what this test is about.
    quiet.length = 0;
    await chattyClient.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    try {
      // server-everything sends one at once and one every 5 s: three within 10 s, 15 s should the
      // first pass before the proxy's own stream to it is open.
      await until('log messages on the stream', () => (chatty.length >= 3 ? true : undefined), 20_000);
    } finally {
      await chattyClient.callTool({ name: 'toggle-simulated-logging', arguments: {} });
    }
    assert.deepEqual(
      quiet.filter((log) => log.level !== 'emergency'),
      [],
      'the stream on A filters at the level set on B',
    );
  });

  test('a message an instance cannot read, or of a kind it does not know, is dropped; it goes on', async () => {
    const { schema } = (await a.service.ctx.db.one<{ schema: string }>('SELECT current_schema() AS schema'))!;
    const channel = `approvals_holds:${schema}`;
    // A stream on A, to see that an unknown kind of message does not end it.
    const client = await connect('every', () => a);
    await client.streamOpen();
    for (const payload of [
      'not json',
      '{"from":"x","mcp":{"type":"from-a-newer-version","session":"s"}}',
      'null',
    ])
      await b.service.ctx.db.one('SELECT pg_notify($1, $2)', [channel, payload]);
    // The link still carries hold changes: a change published on B after those messages reaches A,
    // so A has read (and dropped) them by now.
    await caughtUp(b, a, workspaceId);
    for (const instance of [a, b]) assert.equal((await fetch(`${instance.url}/healthz`)).status, 200);
    assert.deepEqual(await client.ping(), {});
  });
});
