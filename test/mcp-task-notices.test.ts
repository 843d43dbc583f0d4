/**
 * Issue 40: task status is pushed, not only polled. A 2025-11-25 session that made a held call as a
 * task hears `notifications/tasks/status` (the full task) on its GET stream when the hold is decided
 * and when the call has run; a 2026-07-28 client that declared the tasks extension and listens
 * (`subscriptions/listen` with `taskIds`) is acknowledged the task ids of its own and hears
 * `notifications/tasks` (the task as `tasks/get` gives it), each stamped with its subscription id.
 * Raw JSON-RPC over fetch, so every message on the wire is seen as it is.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  SUBSCRIPTION_ID_META_KEY,
} from '@modelcontextprotocol/server';
import { createApiKey } from '../src/services/api-keys.ts';
import { backends, postgres, type Storage } from './support/backends.ts';
import { rpcMessages } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const CONFIG = (url: string) => `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${url}" }
tools:
  - { connection: Recorder, tool: record, classification: approval }
`;

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const REVISION_2026 = '2026-07-28';

type Message = {
  id?: unknown;
  method?: string;
  params?: Record<string, any>;
  result?: Record<string, any>;
  error?: { code: number; message: string };
};

/** The messages of an event stream as they arrive, and when it has ended. */
function reading(response: Response) {
  const messages: Message[] = [];
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffered = '';
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk, { stream: true });
      const events = buffered.split('\n\n');
      buffered = events.pop()!;
      for (const event of events)
        for (const line of event.split('\n'))
          if (line.startsWith('data:')) messages.push(JSON.parse(line.slice(5)));
    }
  })().catch(() => undefined);
  return { messages, ended };
}

/** Streams the tests open, ended when a suite ends. */
const streams: AbortController[] = [];

/** A 2026-07-28 request to the service, with or without the tasks extension declared. */
function modern(service: { url: string }, key: string, message: Message & { id: string }, extension = true) {
  const meta = {
    [PROTOCOL_VERSION_META_KEY]: REVISION_2026,
    [CLIENT_INFO_META_KEY]: { name: 'task-notices-test', version: '1' },
    [CLIENT_CAPABILITIES_META_KEY]: extension ? { extensions: { [TASKS_EXTENSION]: {} } } : {},
  };
  const name = message.params?.name ?? message.params?.taskId;
  const abort = new AbortController();
  streams.push(abort);
  return fetch(`${service.url}/mcp/rec`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${key}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': REVISION_2026,
      'Mcp-Method': message.method!,
      ...(name === undefined ? {} : { 'Mcp-Name': name }),
    },
    body: JSON.stringify({ jsonrpc: '2.0', ...message, params: { ...message.params, _meta: meta } }),
    signal: abort.signal,
  });
}

/** The answer to a 2026-07-28 request. */
async function modernAnswer(
  service: { url: string },
  key: string,
  message: Message & { id: string },
  extension = true,
) {
  return (await rpcMessages(await modern(service, key, message, extension))).find(
    (m) => m.id === message.id,
  ) as Message;
}

for (const backend of backends) {
  describe(
    `MCP task status notifications on ${backend.name}`,
    { skip: backend.skip, timeout: 120_000 },
    () => {
      let t: TestService;
      let upstream: RecordingUpstream;

      before(async () => {
        upstream = await startRecordingUpstream();
        t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      });
      after(async () => {
        for (const stream of streams) stream.abort();
        await t?.close();
        await upstream?.close();
      });

      /** A 2025-11-25 session that has its GET stream open. */
      async function legacySession(key: string) {
        const url = `${t.url}/mcp/rec`;
        const headers: Record<string, string> = {
          Authorization: `Bearer ${key}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        };
        const opened = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 0,
            method: 'initialize',
            params: {
              protocolVersion: '2025-11-25',
              capabilities: { tasks: {} },
              clientInfo: { name: 'task-notices-test', version: '1' },
            },
          }),
        });
        assert.equal(opened.status, 200);
        await opened.text();
        headers['Mcp-Session-Id'] = opened.headers.get('mcp-session-id')!;
        headers['MCP-Protocol-Version'] = '2025-11-25';
        const post = async (message: object) =>
          rpcMessages(await fetch(url, { method: 'POST', headers, body: JSON.stringify(message) }));
        await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const abort = new AbortController();
        streams.push(abort);
        const get = await fetch(url, {
          headers: { ...headers, Accept: 'text/event-stream' },
          signal: abort.signal,
        });
        assert.equal(get.status, 200);
        let next = 0;
        const request = async (method: string, params: object) =>
          (await post({ jsonrpc: '2.0', id: ++next, method, params })).find((m) => m.id === next) as Message;
        return { request, stream: reading(get).messages };
      }

      /** A task as a 2026-era notification carries it, without the notification's subscription id. */
      const notified = ({ _meta: _subscription, ...task }: Record<string, any>) => task;
      /** A task as 2026-era tasks/get answers it, without what every result carries (type, server). */
      const answered = ({ resultType: _type, _meta: _server, ...task }: Record<string, any>) => task;

      const statusNotices = (stream: Message[], taskId: string) =>
        stream.filter((m) => m.method === 'notifications/tasks/status' && m.params?.taskId === taskId);

      test('2025-11-25: a held call made as a task is told its status on the GET stream when approved and run, and when rejected', async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const { request, stream } = await legacySession(key);
        const approved = await request('tools/call', { name: 'record', arguments: { text: 'go' }, task: {} });
        const taskId = approved.result!.task.taskId as string;
        assert.equal(approved.result!.task.status, 'working');

        await decideAs(t, workspace.id, taskId, 'approve');
        const done = await until('the completed task on the stream', () =>
          statusNotices(stream, taskId).find((m) => m.params!.status === 'completed'),
        );
        assert.deepEqual(done.params, (await request('tasks/get', { taskId })).result);
        assert.equal(upstream.calls.filter((call) => call.arguments.text === 'go').length, 1);

        const rejected = await request('tools/call', { name: 'record', arguments: { text: 'no' }, task: {} });
        const rejectedId = rejected.result!.task.taskId as string;
        await decideAs(t, workspace.id, rejectedId, 'reject', 'admin@acme.test', 'not now');
        const told = await until('the ended task on the stream', () => statusNotices(stream, rejectedId)[0]);
        const current = (await request('tasks/get', { taskId: rejectedId })).result!;
        assert.notEqual(current.status, 'working');
        assert.deepEqual(told.params, current);
      });

      test('2025-11-25: an allowed call made as a task is told when it has run; another key does not see the task', async () => {
        const config = CONFIG(upstream.url).concat(
          '  - { connection: Recorder, tool: note, classification: allow }\n',
        );
        upstream.offer('note');
        const { workspace, key } = await t.workspace({ config });
        const { request, stream } = await legacySession(key);
        const allowed = await request('tools/call', { name: 'note', arguments: { text: 'now' }, task: {} });
        const taskId = allowed.result!.task.taskId as string;
        const done = await until('the completed task on the stream', () =>
          statusNotices(stream, taskId).find((m) => m.params!.status === 'completed'),
        );
        assert.deepEqual(done.params, (await request('tasks/get', { taskId })).result);
        // A task is its caller's: another key of the workspace, given the reference, finds no task.
        const other = await createApiKey(t.service.ctx, { workspace, env: 'live' });
        const stranger = await legacySession(other.key);
        for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel'])
          assert.equal((await stranger.request(method, { taskId })).error?.code, -32602, method);
      });

      test('2025-11-25: a held call made without a task is told by the log notice only', async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const { request, stream } = await legacySession(key);
        const held = await request('tools/call', { name: 'record', arguments: { text: 'plain' } });
        const reference = JSON.parse(held.result!.content[1].text).service.reference as string;
        await decideAs(t, workspace.id, reference, 'reject');
        await until('the log notice', () =>
          stream.find((m) => m.method === 'notifications/message' && m.params?.logger === 'approvals'),
        );
        assert.deepEqual(statusNotices(stream, reference), []);
      });

      test('2026-07-28: listening with the task id is acknowledged, then told the task as tasks/get gives it', async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const called = await modernAnswer(t, key, {
          id: 'call-1',
          method: 'tools/call',
          params: { name: 'record', arguments: { text: 'listened' } },
        });
        assert.equal(called.result!.resultType, 'task');
        const taskId = called.result!.taskId as string;

        const listen = await modern(t, key, {
          id: 'listen-1',
          method: 'subscriptions/listen',
          params: { notifications: { taskIds: [taskId, 'svc_pa_unknownunknownunknown'] } },
        });
        assert.equal(listen.status, 200);
        assert.match(listen.headers.get('content-type') ?? '', /text\/event-stream/);
        const { messages } = reading(listen);
        const ack = await until('the acknowledgement', () => messages[0]);
        assert.deepEqual(ack, {
          jsonrpc: '2.0',
          method: 'notifications/subscriptions/acknowledged',
          params: { notifications: { taskIds: [taskId] }, _meta: { [SUBSCRIPTION_ID_META_KEY]: 'listen-1' } },
        });

        await decideAs(t, workspace.id, taskId, 'approve');
        const done = await until('the completed task on the listen stream', () =>
          messages.find((m) => m.method === 'notifications/tasks' && m.params?.status === 'completed'),
        );
        const notices = messages.filter((m) => m.method === 'notifications/tasks');
        for (const notice of notices) {
          assert.equal(notice.params!.taskId, taskId);
          assert.equal(notice.params!._meta[SUBSCRIPTION_ID_META_KEY], 'listen-1');
        }
        const got = await modernAnswer(t, key, { id: 'get-1', method: 'tasks/get', params: { taskId } });
        assert.deepEqual(notified(done.params!), answered(got.result!));
        assert.deepEqual(done.params!.result.content, [{ type: 'text', text: 'recorded: listened' }]);
      });

      test('2026-07-28: listening for tasks without the extension is -32021; a task of another workspace is not acknowledged', async () => {
        const mine = await t.workspace({ config: CONFIG(upstream.url) });
        const called = await modernAnswer(t, mine.key, {
          id: 'call-2',
          method: 'tools/call',
          params: { name: 'record', arguments: { text: 'mine' } },
        });
        const taskId = called.result!.taskId as string;
        const listen = {
          id: 'listen-2',
          method: 'subscriptions/listen',
          params: { notifications: { taskIds: [taskId] } },
        };

        const refused = await modernAnswer(t, mine.key, listen, false);
        assert.equal(refused.error?.code, -32021, JSON.stringify(refused));

        const other = await t.workspace({ config: CONFIG(upstream.url) });
        const stranger = await rpcMessages(await modern(t, other.key, listen));
        assert.deepEqual(stranger[0]!.params.notifications, { taskIds: [] });
        assert.ok(
          stranger.every((m) => m.method !== 'notifications/tasks'),
          'nothing about a task of another workspace',
        );
      });
    },
  );
}

describe('MCP task status notifications across instances on one PostgreSQL', { skip: postgres.skip }, () => {
  let storage: Storage;
  let a: TestService;
  let b: TestService;
  let upstream: RecordingUpstream;

  before(async () => {
    upstream = await startRecordingUpstream();
    storage = await postgres.create();
    const env = { ALLOW_PRIVATE_TARGETS: 'true' };
    a = await startTestService(postgres, { storage, env });
    b = await startTestService(postgres, { storage, env });
  });
  after(async () => {
    for (const stream of streams) stream.abort();
    await a?.stop();
    await b?.stop();
    await storage?.drop();
    await upstream?.close();
  });

  test('a listen on one instance hears a decision made on another', async () => {
    const { workspace, key } = await a.workspace({ config: CONFIG(upstream.url) });
    const called = await modernAnswer(b, key, {
      id: 'call-3',
      method: 'tools/call',
      params: { name: 'record', arguments: { text: 'elsewhere' } },
    });
    const taskId = called.result!.taskId as string;
    const listen = await modern(a, key, {
      id: 'listen-3',
      method: 'subscriptions/listen',
      params: { notifications: { taskIds: [taskId] } },
    });
    const { messages } = reading(listen);
    await until('the acknowledgement', () => messages[0]);
    await decideAs(b, workspace.id, taskId, 'reject');
    const told = await until('the ended task on the listen stream', () =>
      messages.find((m) => m.method === 'notifications/tasks'),
    );
    assert.equal(told.params!.taskId, taskId);
    assert.notEqual(told.params!.status, 'working');
  });
});
