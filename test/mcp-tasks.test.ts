/**
 * Held calls as MCP tasks (issue 21): a client that supports tasks (the 2025-11-25 `tasks`
 * capability, or the tasks extension of the 2026-07-28 revision) gets a task for a call that waits
 * for people. The task works while the hold waits, naming its approvers and its deadline; after an
 * approval it gives the upstream's own result; after a rejection or an expiry an error result; a
 * cancelled task withdraws its hold. Clients are the v2 SDK client with the MCP project's tasks
 * package (`@modelcontextprotocol/ext-tasks`), which does the polling as any host would.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  createTaskSessionFromClient,
  type JsonRpcResponse,
  type RawClientDispatch,
} from '@modelcontextprotocol/ext-tasks/client';
import { z } from 'zod';
import { oversightReport } from '../src/services/reports.ts';
import { findHold } from '../src/store/holds.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { rpcFailure } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { settles, until } from './support/wait.ts';

const CONFIG = (url: string) => `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: fin@acme.test, name: Finn Finance, role: approver }
groups: { finance: [fin@acme.test] }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${url}" }
rules:
  - { name: Records go to finance, connection: Recorder, tool: record, effect: approval, approvers: ["group:finance"], timeout_minutes: 30 }
tools:
  - { connection: Recorder, tool: record, classification: approval }
  - { connection: Recorder, tool: note, classification: allow }
`;

const REVISION_2026 = '2026-07-28';

/** A result the test reads itself (the SDK client checks only the spec's own methods). */
const AnyResult = z.object({}).loose();
const cancelTask = (client: Client, taskId: string) =>
  client.request({ method: 'tasks/cancel', params: { taskId } }, AnyResult);

type Era = 'legacy' | 'auto';

/**
 * The 2026-07-28 tasks extension frames its requests itself (the SDK client's codecs do not know its
 * wire shapes): this posts one JSON-RPC request to the endpoint with the revision's headers and reads
 * the answer (JSON or an event stream), as the package's documentation asks a host to.
 */
function rawDispatchTo(url: string, key: string): RawClientDispatch {
  let next = 0;
  return async (request, options) => {
    const message = { jsonrpc: '2.0', id: `raw-${++next}`, ...(request as object) } as unknown as {
      id: string;
      method: string;
      params?: { name?: string; taskId?: string };
    };
    const name = message.params?.taskId ?? message.params?.name;
    const answer = await fetch(url, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'MCP-Protocol-Version': REVISION_2026,
        'Mcp-Method': message.method,
        ...(name === undefined ? {} : { 'Mcp-Name': name }),
      },
      body: JSON.stringify(message),
      ...(options?.signal ? { signal: options.signal } : {}),
    });
    const text = await answer.text();
    const bodies = answer.headers.get('content-type')?.includes('text/event-stream')
      ? text
          .split('\n')
          .filter((line) => line.startsWith('data:'))
          .map((line) => JSON.parse(line.slice(5)))
      : [JSON.parse(text)];
    const response = bodies.find((body) => body.id === message.id);
    if (!response) throw new Error(`no answer to ${message.method} (HTTP ${answer.status})`);
    return (
      response.error ? { kind: 'error', error: response.error } : { kind: 'result', result: response.result }
    ) as JsonRpcResponse;
  };
}

for (const backend of backends) {
  describe(`held calls as MCP tasks on ${backend.name}`, { skip: backend.skip, timeout: 120_000 }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    const closers: (() => Promise<unknown>)[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      upstream.offer('note');
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      await Promise.all(closers.map((close) => close().catch(() => {})));
      await t?.close();
      await upstream?.close();
    });

    async function taskSession(key: string, era: Era) {
      const url = `${t.url}/mcp/rec`;
      const client = new Client({ name: 'tasks-test', version: '1' }, { versionNegotiation: { mode: era } });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(url), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      const session =
        era === 'legacy'
          ? createTaskSessionFromClient(client, { endpointId: 'rec' })
          : createTaskSessionFromClient(client, {
              endpointId: 'rec',
              rawDispatch: rawDispatchTo(url, key),
              v2RequestFraming: {
                protocolVersion: REVISION_2026,
                clientInfo: { name: 'tasks-test', version: '1' },
                clientCapabilities: {},
              },
            });
      closers.push(async () => {
        await session.close();
        await client.close();
      });
      return { client, session };
    }

    const holdOf = async (workspace: Workspace, taskId: string) =>
      (await findHold(t.service.ctx.db, workspace.id, taskId))!;

    for (const era of ['legacy', 'auto'] as const) {
      const revision = era === 'legacy' ? '2025-11-25 tasks' : '2026-07-28 tasks extension';

      test(`${revision}: a held call is a working task naming its approvers and deadline; approved, it gives the upstream's result`, async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const { session } = await taskSession(key, era);
        const execution = await session.callTool(
          'record',
          { text: `pay ${era}` },
          {
            task: { preference: 'require' },
          },
        );
        assert.equal(execution.kind, 'task');
        const taskId = execution.handle!.taskId;
        const hold = await holdOf(workspace, taskId);
        assert.equal(hold.status, 'pending', 'the task is the hold');

        const task = await session.task(taskId).snapshot();
        assert.equal(task.status, 'working');
        assert.match(task.statusMessage ?? '', /Held for human approval: waiting for finance until/);
        assert.match(
          task.statusMessage ?? '',
          new RegExp(new Date(hold.expiresAt!).toISOString().slice(0, 16).replace('T', ' ')),
        );
        assert.equal(upstream.calls.filter((call) => call.arguments.text === `pay ${era}`).length, 0);

        await decideAs(t, workspace.id, taskId, 'approve', 'fin@acme.test');
        const { outcome } = await execution.settle();
        assert.equal(
          outcome.status,
          'completed',
          String((outcome as { error?: { stack?: string } }).error?.stack) + JSON.stringify(outcome),
        );
        assert.deepEqual((outcome as { result: { content: unknown } }).result.content, [
          { type: 'text', text: `recorded: pay ${era}` },
        ]);
        assert.equal(upstream.calls.filter((call) => call.arguments.text === `pay ${era}`).length, 1);
      });

      // 2025: a call not carried out fails its task; the 2026 extension keeps `failed` for JSON-RPC errors.
      const ended = era === 'legacy' ? 'failed' : 'completed';
      test(`${revision}: rejected or expired, the task ends ${ended} with an error result`, async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const { session, client } = await taskSession(key, era);
        // How the task ended, and its result: inline on 2026; from tasks/result on 2025 (a success).
        const endOf = async (execution: Awaited<ReturnType<typeof session.callTool>>) => {
          const { outcome } = await execution.settle();
          const result =
            era === 'legacy'
              ? await client.request(
                  { method: 'tasks/result', params: { taskId: execution.handle!.taskId } },
                  AnyResult,
                )
              : (outcome as { result: unknown }).result;
          return {
            status: outcome.status,
            result: result as { isError?: boolean; content: { text: string }[] },
          };
        };
        const rejected = await session.callTool(
          'record',
          { text: 'reject me' },
          { task: { preference: 'require' } },
        );
        await decideAs(t, workspace.id, rejected.handle!.taskId, 'reject', 'fin@acme.test', 'not this month');
        const first = await endOf(rejected);
        assert.equal(first.status, ended);
        assert.equal(first.result.isError, true);
        assert.match(first.result.content[0]!.text, /denied/);

        const expiring = await session.callTool(
          'record',
          { text: 'too late' },
          { task: { preference: 'require' } },
        );
        t.clock.advance(31 * 60_000);
        const second = await endOf(expiring);
        assert.equal(second.status, ended);
        assert.equal(second.result.isError, true);
        assert.match(second.result.content[0]!.text, /expired/);
        assert.equal((await holdOf(workspace, expiring.handle!.taskId)).status, 'expired');
        if (era === 'legacy') {
          for (const { handle } of [rejected, expiring]) {
            const refused = await rpcFailure(cancelTask(client, handle!.taskId));
            assert.equal(refused.code, -32602, 'an ended task cannot be cancelled');
          }
        }
      });

      test(`${revision}: cancelling the task withdraws the hold, with evidence; approvers see it closed`, async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
        const { session, client } = await taskSession(key, era);
        const execution = await session.callTool(
          'record',
          { text: 'never mind' },
          { task: { preference: 'require' } },
        );
        const taskId = execution.handle!.taskId;
        await execution.cancel();
        const hold = await until('the hold withdrawn', async () => {
          const current = await holdOf(workspace, taskId);
          return current.status === 'pending' ? undefined : current;
        });
        assert.equal(hold.status, 'rejected');
        assert.equal(hold.channel, 'agent');
        assert.match(hold.reason ?? '', /withdrawn/i);
        const entries = await t.service.ctx.db.all<{ type: string; data: string }>(
          'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        );
        const withdrawn = entries.find((entry) => entry.type === 'hold.withdrawn');
        assert.ok(withdrawn, entries.map((entry) => entry.type).join(', '));
        assert.equal(JSON.parse(withdrawn.data).hold, taskId);
        assert.equal((await session.task(taskId).snapshot()).status, 'cancelled');
        if (era === 'legacy') {
          // Cancelled is an end: a second cancel is refused as for any ended task.
          const again = await rpcFailure(cancelTask(client, taskId));
          assert.equal(again.code, -32602, again.message);
        }
        // The approver's open inbox is told it left, and why.
        const fin = await appClient(() => t).signIn(workspace, 'fin@acme.test');
        const changes = await fetch(`${t.url}/app/inbox/changes?shown=${taskId}&since=0`, {
          headers: { cookie: `approvals_session=${fin.cookie}` },
        });
        assert.deepEqual((await changes.json()).left, [
          { id: taskId, status: 'rejected', note: 'Withdrawn by the agent' },
        ]);
        // The public status page says so too.
        assert.match(
          await (await fetch(`${t.url}/a/${taskId}`)).text(),
          /Withdrawn by the agent before a decision/,
        );
        // Reports: nobody decided it; it is no rejection by people.
        const report = await oversightReport(t.service.ctx, workspace, { from: 0, to: t.clock.now() + 1 });
        assert.deepEqual(report.decidedBy, { rule: 0, people: 0, undecided: 1 });
        assert.deepEqual(
          report.tools.map((tool) => [tool.holds, tool.rejected]),
          [[1, 0]],
        );
        // The same call again is a new request, not the withdrawn one.
        const again = await session.callTool(
          'record',
          { text: 'never mind' },
          { task: { preference: 'require' } },
        );
        assert.notEqual(again.handle!.taskId, taskId);
        // A decision afterwards changes nothing, and nothing ran upstream.
        const late = await decideAs(t, workspace.id, taskId, 'approve', 'fin@acme.test');
        assert.equal(late.outcome, 'closed');
        assert.equal(upstream.calls.filter((call) => call.arguments.text === 'never mind').length, 0);
      });
    }

    test('2025-11-25: a decision made while tasks/result reads the hold answers it at once', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
      const { session, client } = await taskSession(key, 'legacy');
      const execution = await session.callTool(
        'record',
        { text: 'decided mid-read' },
        { task: { preference: 'require' } },
      );
      const taskId = execution.handle!.taskId;
      // The second read of the hold by tasks/result (the one it decides to wait on) returns it pending;
      // before its answer is looked at, the decision commits and is told. A rejection: nothing follows
      // it that would wake a wait that missed it.
      const db = t.service.ctx.db;
      const one = db.one;
      let reads = 0;
      let decided: Promise<unknown> | undefined;
      db.one = (async (text: string, params?: unknown[]) => {
        const row = await one.call(db, text, params);
        if (params?.[0] === taskId && text.includes('FROM holds WHERE id') && (reads += 1) === 2) {
          decided = decideAs(t, workspace.id, taskId, 'reject', 'fin@acme.test', 'not this one');
          await decided;
        }
        return row;
      }) as typeof db.one;
      try {
        // Far less than the 60 s a wait that missed the decision would take.
        const result = await settles(
          'tasks/result to answer',
          client.request({ method: 'tasks/result', params: { taskId } }, AnyResult),
          15_000,
        );
        assert.ok(decided, 'the decision was made during the read');
        const ended = result as { isError?: boolean; content: { text: string }[] };
        assert.equal(ended.isError, true);
        assert.match(ended.content[0]!.text, /denied/);
      } finally {
        db.one = one;
      }
    });

    test('2026-07-28: tasks/get, tasks/update and tasks/cancel from a client that did not declare the extension are -32021', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
      const { session } = await taskSession(key, 'auto');
      const held = await session.callTool(
        'record',
        { text: 'undeclared' },
        { task: { preference: 'require' } },
      );
      const taskId = held.handle!.taskId;
      const undeclared = rawDispatchTo(`${t.url}/mcp/rec`, key);
      const meta = {
        'io.modelcontextprotocol/protocolVersion': REVISION_2026,
        'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '1' },
        'io.modelcontextprotocol/clientCapabilities': {},
      };
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        const answer = await undeclared({ method, params: { taskId, _meta: meta } } as never);
        assert.equal(answer.kind, 'error', method);
        const { error } = answer as { error: { code: number; data?: unknown } };
        assert.equal(error.code, -32021, method);
        assert.deepEqual(error.data, {
          requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
        });
      }
      assert.equal((await holdOf(workspace, taskId)).status, 'pending', 'not withdrawn');
    });

    test('2025-11-25: an allowed call asked as a task is a finished task with the upstream result; a task of another workspace is not found', async () => {
      const { key } = await t.workspace({ config: CONFIG(upstream.url) });
      const { session, client } = await taskSession(key, 'legacy');
      const tools = (await client.listTools()).tools;
      assert.deepEqual(
        tools.map((tool) => [tool.name, tool.execution?.taskSupport]),
        [
          ['record', 'optional'],
          ['wait', 'optional'],
          ['note', 'optional'],
          ['service_check_status', undefined],
        ],
      );
      assert.deepEqual(client.getServerCapabilities()?.tasks, {
        cancel: {},
        requests: { tools: { call: {} } },
      });

      const allowed = await session.callTool(
        'note',
        { text: 'at once' },
        { task: { preference: 'require' } },
      );
      assert.equal(allowed.kind, 'task');
      const { outcome } = await allowed.settle();
      assert.deepEqual(outcome.status === 'completed' && outcome.result.content, [
        { type: 'text', text: 'recorded: at once' },
      ]);

      const held = await session.callTool('record', { text: 'mine' }, { task: { preference: 'require' } });
      const other = await t.workspace({ config: CONFIG(upstream.url) });
      const stranger = await taskSession(other.key, 'legacy');
      await assert.rejects(stranger.session.task(held.handle!.taskId).snapshot(), /not found/i);
      // The status check is not offered as a task: asked as one anyway, it is "method not found".
      const refused = await rpcFailure(
        client.request({
          method: 'tools/call',
          params: { name: 'service_check_status', arguments: { reference: held.handle!.taskId }, task: {} },
        }),
      );
      assert.equal(refused.code, -32601);
    });

    test('2025-11-25: an allowed call asked as a task begins working and runs on after its answer', async () => {
      // `wait` answers only when cancelled: here it runs until the server's 1 s call timeout.
      const config = CONFIG(upstream.url)
        .replace('url: "', 'call_timeout_seconds: 1, url: "')
        .concat('  - { connection: Recorder, tool: wait, classification: allow }\n');
      const { workspace, key } = await t.workspace({ config });
      const { session } = await taskSession(key, 'legacy');
      const before = upstream.calls.length;
      const running = await session.callTool('wait', {}, { task: { preference: 'require' } });
      assert.equal(running.kind, 'task');
      const taskId = running.handle!.taskId;
      assert.equal((await session.task(taskId).snapshot()).status, 'working');
      assert.equal(upstream.calls.length, before + 1, 'it was sent upstream before its task was answered');
      // Running, it cannot be stopped; when the upstream does not answer in time it fails.
      const hold = await until('the call to end', async () => {
        const found = await holdOf(workspace, taskId);
        return found.execution?.status === 'failed' ? found : undefined;
      });
      assert.equal(hold.status, 'auto_allowed');
      assert.equal((await session.task(taskId).snapshot()).status, 'failed');
    });

    test('a v1 SDK client without tasks: the held answer, then the outcome from service_check_status', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(upstream.url) });
      const client = new ClientV1({ name: 'tasks-test-v1', version: '1' });
      await client.connect(
        new TransportV1(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      closers.push(() => client.close());
      const text = (result: unknown) => (result as { content: { text: string }[] }).content;
      const held = await client.callTool({ name: 'record', arguments: { text: 'plain' } });
      assert.equal(held.isError, undefined);
      assert.match(text(held)[0]!.text, /is waiting for human approval/);
      const { reference } = JSON.parse(text(held)[1]!.text).service;
      await decideAs(t, workspace.id, reference, 'reject', 'fin@acme.test');
      const outcome = await client.callTool({ name: 'service_check_status', arguments: { reference } });
      assert.equal(outcome.isError, true, 'a rejection is an error for the model');
      assert.equal(JSON.parse(text(outcome)[1]!.text).service.status, 'denied');
    });
  });
}
