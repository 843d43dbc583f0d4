/**
 * What the MCP proxy carries besides a request and its answer (interface.md, MCP proxy endpoint:
 * "notifications passed through"): the upstream's progress while a call runs, a client's
 * cancellation, and what the upstream sends on its own (log messages, list changes, resource
 * updates), in both protocol eras, with the official SDK client and real upstreams.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { getHold } from '../src/services/read-hold.ts';
import { backends } from './support/backends.ts';
import {
  type ChangingUpstream,
  type EverythingUpstream,
  type RecordingUpstream,
  startChangingUpstream,
  startEverything,
  startRecordingUpstream,
} from './support/mcp-upstream.ts';
import { watchingStream } from './support/proxy-client.ts';
import { startTestService, type TestService } from './support/service.ts';
import { settles, until } from './support/wait.ts';

const ADMIN = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
const ERAS = ['legacy', 'auto'] as const;
type Era = (typeof ERAS)[number];

for (const backend of backends) {
  describe(`MCP proxy relay on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let everything: EverythingUpstream;
    let recorder: RecordingUpstream;
    let changing: ChangingUpstream;
    let key: string;
    let workspaceId: string;
    const clients: Client[] = [];

    before(async () => {
      [everything, recorder, changing] = await Promise.all([
        startEverything(),
        startRecordingUpstream(),
        startChangingUpstream(),
      ]);
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      const created = await t.workspace({
        config:
          `${ADMIN}mcp_servers:\n` +
          `  - { slug: every, name: Everything, url: "${everything.url}" }\n` +
          `  - { slug: rec, name: Recorder, url: "${recorder.url}" }\n` +
          `  - { slug: grow, name: Growing, url: "${changing.url}" }\n` +
          'tools:\n' +
          ['trigger-long-running-operation', 'toggle-simulated-logging', 'toggle-subscriber-updates']
            .map((tool) => `  - { connection: Everything, tool: ${tool}, classification: allow }\n`)
            .join('') +
          '  - { connection: Recorder, tool: wait, classification: allow }\n' +
          '  - { connection: Growing, tool: grow, classification: allow }\n',
      });
      key = created.key;
      workspaceId = created.workspace.id;
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await Promise.all([everything?.stop(), recorder?.close(), changing?.close()]);
      }
    });

    /** A client in `era`; for a 2025-era one, `streamOpen()` resolves once its GET stream is open. */
    async function connect(slug: string, era: Era, options: ConstructorParameters<typeof Client>[1] = {}) {
      const client = new Client(
        { name: 'relay-test', version: '1' },
        { ...options, versionNegotiation: { mode: era } },
      );
      const { fetch: watched, streamOpen } = watchingStream();
      const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${slug}`), {
        requestInit: { headers: { Authorization: `Bearer ${key}` } },
        fetch: watched,
      });
      await client.connect(transport);
      clients.push(client);
      return Object.assign(client, { streamOpen: () => settles('the GET stream to open', streamOpen) });
    }

    test('progress reaches the client while the call runs, not with its result', async () => {
      for (const era of ERAS) {
        const client = await connect('every', era);
        const arrivals: number[] = [];
        const started = Date.now();
        await client.callTool(
          { name: 'trigger-long-running-operation', arguments: { duration: 2, steps: 4 } },
          { onprogress: () => arrivals.push(Date.now() - started) },
        );
        const finished = Date.now() - started;
        assert.equal(arrivals.length, 4, era);
        // Steps come every 500 ms: the first is seen about 1.5 s before the result, not with it.
        assert.ok(
          finished - arrivals[0]! > 1000,
          `${era}: first progress at ${arrivals[0]} ms of ${finished}`,
        );
      }
    });

    test("a client's cancellation reaches the upstream; the call is recorded as cancelled", async () => {
      for (const era of ERAS) {
        const client = await connect('rec', era);
        const callsBefore = recorder.calls.length;
        const abort = new AbortController();
        const call = client.callTool({ name: 'wait', arguments: { era } }, { signal: abort.signal });
        await until('the call upstream', () => (recorder.calls.length > callsBefore ? true : undefined));
        const upstreamCall = recorder.requests.findLast(
          (request) => request.body?.method === 'tools/call' && request.body.params?.name === 'wait',
        )!;
        abort.abort();
        await assert.rejects(call);
        // legacy: a notifications/cancelled of its own; 2026-era: the request closed. Either way the
        // proxy cancels the request it made upstream, by that request's id.
        const cancelled = await until('the cancellation upstream', () =>
          recorder.requests.find(
            (request) =>
              request.body?.method === 'notifications/cancelled' &&
              request.body.params?.requestId === upstreamCall.body!.id,
          ),
        );
        assert.ok(cancelled, era);
        const hold = await until('the execution record', async () => {
          const rows = await t.service.ctx.db.all<{ id: string }>(
            "SELECT id FROM holds WHERE workspace_id = $1 AND tool_name = 'wait' AND arguments LIKE $2",
            [workspaceId, `%${era}%`],
          );
          const found = rows[0] && (await getHold(t.service.ctx, workspaceId, rows[0].id));
          return found?.execution?.status === 'failed' ? found : undefined;
        });
        assert.equal(
          (hold.execution!.outcome as { message: string }).message,
          'The client cancelled the call',
        );
      }
    });

    test('log messages the upstream sends on its own reach every session stream, at its level', async () => {
      type Log = { level: string; data: unknown };
      const quiet: Log[] = [];
      const chatty: Log[] = [];
      const listener = (into: Log[]) => (n: { params: Log }) => void into.push(n.params);
      const a = await connect('every', 'legacy');
      a.setNotificationHandler('notifications/message', listener(quiet));
      await a.setLoggingLevel('emergency');
      const b = await connect('every', 'legacy');
      b.setNotificationHandler('notifications/message', listener(chatty));
      await Promise.all([a.streamOpen(), b.streamOpen()]);
      await a.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      try {
        await until('a log message on the stream', () => (chatty.length > 0 ? true : undefined), 12_000);
      } finally {
        await a.callTool({ name: 'toggle-simulated-logging', arguments: {} });
      }
      assert.match(String(chatty[0]!.data), /level.message/i);
      for (const log of quiet) assert.equal(log.level, 'emergency');
      const session = await t.service.ctx.db.one<{ n: number }>(
        "SELECT COUNT(*) AS n FROM mcp_sessions WHERE workspace_id = $1 AND log_level = 'emergency'",
        [workspaceId],
      );
      assert.equal(Number(session!.n), 1, 'the level is kept with the session');
    });

    test('a list change of a 2026-era upstream reaches 2025-era streams and 2026-era listeners', async () => {
      const seen: Record<Era, string[][]> = { legacy: [], auto: [] };
      for (const era of ERAS) {
        await connect('grow', era, {
          listChanged: {
            tools: {
              debounceMs: 0,
              onChanged: (_error, tools) => seen[era].push((tools ?? []).map((x) => x.name)),
            },
          },
        });
      }
      const caller = await connect('grow', 'legacy');
      // A change reaches the listeners open when it happens, here and between the proxy and the
      // upstream (the proxy listens there once a client listens): grow until each era has heard one.
      await until('a list change to reach every era', async () => {
        if (ERAS.every((era) => seen[era].length > 0)) return true;
        await caller.callTool({ name: 'grow', arguments: {} });
        return undefined;
      });
      for (const era of ERAS) {
        const names = seen[era].at(-1)!;
        assert.ok(names.includes('grown-1'), `${era}: ${names.join(', ')}`);
        assert.ok(names.includes('service_check_status'), 'the refreshed list comes through the proxy');
      }
    });

    test(
      'stopping the service ends its standing streams, so it stops at once',
      { timeout: 20_000 },
      async () => {
        const other = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
        const { key: otherKey } = await other.workspace({
          config: `${ADMIN}mcp_servers:\n  - { slug: grow, name: Growing, url: "${changing.url}" }\n`,
        });
        const open: Client[] = [];
        const streams: Promise<void>[] = [];
        for (const era of ERAS) {
          const client = new Client(
            { name: 'relay-test', version: '1' },
            { versionNegotiation: { mode: era }, listChanged: { tools: { onChanged: () => undefined } } },
          );
          const { fetch: watched, streamOpen } = watchingStream();
          await client.connect(
            new StreamableHTTPClientTransport(new URL(`${other.url}/mcp/grow`), {
              requestInit: { headers: { Authorization: `Bearer ${otherKey}` } },
              fetch: watched,
            }),
          );
          open.push(client);
          streams.push(settles(`the ${era} client's stream to open`, streamOpen));
        }
        // A GET stream and a subscriptions/listen stand open when the service stops.
        await Promise.all(streams);
        await other.close();
        await Promise.all(open.map((client) => client.close().catch(() => {})));
      },
    );

    test('resource updates reach the sessions that subscribed, and only those', async () => {
      const updates: Record<'subscribed' | 'other', string[]> = { subscribed: [], other: [] };
      const subscribed = await connect('every', 'legacy');
      const other = await connect('every', 'legacy');
      for (const [name, client] of [
        ['subscribed', subscribed],
        ['other', other],
      ] as const) {
        client.setNotificationHandler(
          'notifications/resources/updated',
          (n) => void updates[name].push(n.params.uri),
        );
      }
      const uri = 'demo://resource/static/document/architecture.md';
      await subscribed.subscribeResource({ uri });
      await Promise.all([subscribed.streamOpen(), other.streamOpen()]);
      await subscribed.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      try {
        await until('a resource update', () => (updates.subscribed.length > 0 ? true : undefined), 12_000);
      } finally {
        await subscribed.callTool({ name: 'toggle-subscriber-updates', arguments: {} });
      }
      assert.equal(updates.subscribed[0], uri);
      assert.deepEqual(updates.other, []);
      await subscribed.unsubscribeResource({ uri });
    });
  });
}
