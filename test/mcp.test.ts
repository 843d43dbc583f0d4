/**
 * The MCP proxy end to end (interface.md, MCP proxy endpoint; decisions.md, MCP proxy): the official
 * SDK client talks to a real service, which talks to the real `server-everything` upstream (and, for
 * what upstream receives, a small recording upstream of our own).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { listedWithHeldAnswer } from '../src/domain/held-output-schema.ts';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { canonicalJson } from '../packages/sdk/src/canonical-json.ts';
import { CLIENT_FEATURES } from '../src/mcp/upstream.ts';
import { exportConfig } from '../src/services/apply-config.ts';
import { sha256Hex } from '../src/services/hashing.ts';
import { getHold } from '../src/services/read-hold.ts';
import { listTools } from '../src/store/tools.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, rpcMessages, rpcFailure } from './support/http.ts';
import { type EverythingUpstream, startEverything, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const ADMIN = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
const DEADLINE_MS = 240 * 60_000;
interface Envelope {
  status: string;
  reference: string;
  status_url: string;
  terminal: boolean;
  retryable: boolean;
  retry: string;
  message: string;
  action?: { tool: string; arguments: Record<string, unknown>; summary: string };
  expires_at?: string | null;
  deduplicated?: boolean;
}

interface ToolResult {
  content: { type: string; text?: string; [key: string]: unknown }[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** The `service` object of a held (or checked) answer; asserts the two-text-block shape. */
function envelopeOf(result: unknown): Envelope {
  const { content } = result as ToolResult;
  assert.ok(content.length >= 2, 'at least the two envelope blocks');
  assert.equal(content[0]!.type, 'text');
  assert.equal(content[1]!.type, 'text');
  const parsed = JSON.parse(content[1]!.text!) as { service: Envelope };
  assert.deepEqual(Object.keys(parsed), ['service']);
  assert.equal(content[0]!.text, parsed.service.message, 'the first block is the sentence for the human');
  return parsed.service;
}

/**
 * A client of the upstream itself, for comparing what the proxy passes through. It declares what the
 * proxy declares upstream: server-everything lists some tools only to clients with sampling & co.
 */
async function directClient(url: string) {
  const client = new Client({ name: 'direct', version: '1' }, { capabilities: CLIENT_FEATURES });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const initialize = (protocolVersion: string, id: number | string = 1) => ({
  jsonrpc: '2.0',
  id,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

for (const backend of backends) {
  describe(`MCP proxy on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let upstream: EverythingUpstream;
    let direct: Client;
    const clients: Client[] = [];

    before(async () => {
      upstream = await startEverything();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      direct = await directClient(upstream.url);
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await direct?.close().catch(() => {});
        await t?.close();
      } finally {
        await upstream?.stop();
      }
    });

    /** A workspace whose MCP server `every` (connection `Everything`) is the given upstream. */
    const workspaceWith = (extra = '', url = upstream.url, slug = 'every') =>
      t.workspace({
        config: `${ADMIN}mcp_servers:\n  - { slug: ${slug}, name: Everything, url: "${url}" }\n${extra}`,
      });

    async function connect(
      key: string,
      options: {
        slug?: string;
        agent?: string;
        session?: string;
        negotiation?: 'legacy' | 'auto';
      } = {},
    ) {
      const headers: Record<string, string> = { Authorization: `Bearer ${key}` };
      if (options.agent) headers['X-Service-Agent'] = options.agent;
      if (options.session) headers['X-Service-Session'] = options.session;
      const client = new Client(
        { name: 'mcp-test', version: '1' },
        { versionNegotiation: { mode: options.negotiation ?? 'legacy' } },
      );
      const transport = new StreamableHTTPClientTransport(
        new URL(`${t.url}/mcp/${options.slug ?? 'every'}`),
        {
          requestInit: { headers },
        },
      );
      await client.connect(transport);
      clients.push(client);
      return client;
    }

    /** A raw 2025-era session: initialize once, then JSON-RPC requests over fetch. */
    async function rawSession(key: string, slug = 'every') {
      const headers = {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      };
      const init = await fetch(`${t.url}/mcp/${slug}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(initialize('2025-06-18')),
      });
      assert.equal(init.status, 200);
      await init.arrayBuffer();
      const session = init.headers.get('mcp-session-id')!;
      let id = 1;
      return async (method: string, params: Record<string, unknown>) => {
        id += 1;
        const response = await fetch(`${t.url}/mcp/${slug}`, {
          method: 'POST',
          headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' },
          body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
        });
        assert.equal(response.status, 200);
        return (await rpcMessages(response)).find((message) => message.id === id);
      };
    }

    const callTool = (client: Client, name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args }) as Promise<ToolResult>;
    const checkStatus = (client: Client, reference: string) =>
      callTool(client, 'service_check_status', { reference });
    const getRecord = (key: string, id: string) => call(t.url, 'GET', `/api/v1/holds/${id}`, { key });

    /** Waits until the service ran (or failed to run) an approved call. */
    const executed = (workspace: Workspace, id: string) =>
      until(`hold ${id} to be run`, async () => {
        const hold = await getHold(t.service.ctx, workspace.id, id);
        return hold.status === 'executed' || hold.status === 'failed' ? hold : undefined;
      });

    async function evidence(workspace: Workspace) {
      const rows = await t.service.ctx.db.all<{ type: string; data: string }>(
        'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
        [workspace.id],
      );
      return rows.map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, any> }));
    }
    const evidenceOf = async (workspace: Workspace, holdId: string) =>
      (await evidence(workspace)).filter((entry) => entry.data.hold === holdId).map((entry) => entry.type);

    const holdIds = async (workspace: Workspace, tool: string) =>
      (
        await t.service.ctx.db.all<{ id: string }>(
          'SELECT id FROM holds WHERE workspace_id = $1 AND tool_name = $2 ORDER BY created_at, id',
          [workspace.id, tool],
        )
      ).map((row) => row.id);

    test('tools/list passes the upstream tools through, adds service_check_status, registers them as new', async () => {
      const { workspace, key } = await workspaceWith();
      const client = await connect(key);
      const upstreamTools = (await direct.listTools()).tools;
      const { tools } = await client.listTools();
      assert.deepEqual(
        tools.map((tool) => tool.name),
        [...upstreamTools.map((tool) => tool.name), 'service_check_status'],
      );
      // Definitions pass through unchanged (schemas, annotations), except that any call may run as a
      // task of the proxy's (a held call waits for people: mcp-tasks.test.ts), and an output schema
      // also takes the held answer (held-output-schema.ts).
      assert.deepEqual(
        tools.slice(0, -1),
        upstreamTools.map((tool) =>
          listedWithHeldAnswer({ ...tool, execution: { ...tool.execution, taskSupport: 'optional' } }),
        ),
      );
      const check = tools.at(-1)!;
      assert.deepEqual(check.inputSchema.required, ['reference']);
      assert.equal((check.inputSchema.properties as Record<string, any>).reference.type, 'string');

      const stored = await listTools(t.service.ctx.db, workspace.id);
      assert.deepEqual(
        stored.map((tool) => [tool.connection, tool.name, tool.classification]).sort(),
        upstreamTools.map((tool) => ['Everything', tool.name, 'new']).sort(),
      );
      const registered = (await evidence(workspace)).filter((entry) => entry.type === 'tool.registered');
      assert.equal(registered.length, 1);
      assert.equal(registered[0]!.data.connection, 'Everything');
      assert.equal(registered[0]!.data.classification, 'new');
      assert.deepEqual(
        [...registered[0]!.data.tool_names].sort(),
        upstreamTools.map((tool) => tool.name).sort(),
      );
      // Listing again registers nothing new.
      await client.listTools();
      assert.equal((await evidence(workspace)).filter((entry) => entry.type === 'tool.registered').length, 1);
      // Still unclassified, so not part of the exported configuration (which lists classifications).
      assert.deepEqual((await exportConfig(t.service.ctx, workspace)).tools, []);
    });

    test('an allowed call returns the upstream result exactly; its hold is auto_allowed', async () => {
      const { workspace, key } = await workspaceWith(
        'tools:\n  - { connection: Everything, tool: echo, classification: allow }\n' +
          '  - { connection: Everything, tool: get-tiny-image, classification: allow }\n',
      );
      const client = await connect(key, { agent: 'allowed-bot' });
      const result = await callTool(client, 'echo', { message: 'hello through the proxy' });
      assert.deepEqual(
        result,
        await direct.callTool({ name: 'echo', arguments: { message: 'hello through the proxy' } }),
      );
      assert.deepEqual(result.content, [{ type: 'text', text: 'Echo: hello through the proxy' }]);
      // Binary content passes unchanged too.
      const image = await callTool(client, 'get-tiny-image', {});
      assert.deepEqual(image, await direct.callTool({ name: 'get-tiny-image', arguments: {} }));

      const [id] = await holdIds(workspace, 'echo');
      assert.ok(id);
      const record = await getRecord(key, id);
      assert.equal(record.status, 200);
      assert.equal(record.body.status, 'auto_allowed');
      assert.equal(record.body.connection, 'Everything');
      assert.equal(record.body.tool_name, 'echo');
      assert.deepEqual(record.body.agent_identity, { id: 'allowed-bot', label: null });
      assert.equal(record.body.decision, null);
      const trail = await evidenceOf(workspace, id);
      assert.deepEqual(trail, ['hold.submitted', 'hold.executed']);
      const executedEntry = (await evidence(workspace)).find(
        (entry) => entry.type === 'hold.executed' && entry.data.hold === id,
      )!;
      assert.equal(executedEntry.data.result_sha256, sha256Hex(canonicalJson(result)));
    });

    test('an allowed call relays the upstream progress to the client, in both protocol eras', async () => {
      const { key } = await workspaceWith(
        'tools:\n  - { connection: Everything, tool: trigger-long-running-operation, classification: allow }\n',
      );
      for (const negotiation of ['legacy', 'auto'] as const) {
        const client = await connect(key, { negotiation });
        const seen: number[] = [];
        const result = await client.callTool(
          { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } },
          { onprogress: (progress) => seen.push(progress.progress) },
        );
        assert.deepEqual(seen, [1, 2, 3], negotiation);
        assert.match(JSON.stringify(result.content), /Long running operation completed/);
        await client.close();
      }
    });

    test('an allowed call: GET shows execution.status executed with the result', async () => {
      const { workspace, key } = await workspaceWith(
        'tools:\n  - { connection: Everything, tool: echo, classification: allow }\n',
      );
      const client = await connect(key);
      const result = await callTool(client, 'echo', { message: 'x' });
      const [id] = await holdIds(workspace, 'echo');
      const { body } = await getRecord(key, id!);
      assert.equal(body.execution?.status, 'executed');
      assert.deepEqual(body.execution.result, result);
      assert.ok(Date.parse(body.execution.completed_at) > 0);
    });

    test('a held call: immediate envelope, no blocking, dedup, approval runs it once, then the result', async () => {
      const { workspace, key } = await workspaceWith(
        'tools:\n  - { connection: Everything, tool: echo, classification: allow }\n',
      );
      const client = await connect(key, { agent: 'held-bot' });
      const args = { a: 2, b: 3 };
      const started = Date.now();
      const held = await callTool(client, 'get-sum', args);
      assert.equal(held.content.length, 2, 'exactly two blocks');
      assert.equal(held.isError, undefined, 'no isError for a tool without outputSchema');
      const envelope = envelopeOf(held);
      assert.match(envelope.reference, /^svc_pa_[A-Za-z0-9_-]{22,}$/);
      assert.deepEqual(envelope, {
        status: 'held',
        reference: envelope.reference,
        status_url: `${t.url}/a/${envelope.reference}`,
        terminal: false,
        retryable: true,
        retry: 'poll',
        message: envelope.message,
        action: { tool: 'get-sum', arguments: args, summary: envelope.action!.summary },
        expires_at: envelope.expires_at,
      });
      assert.ok(envelope.message.includes(envelope.reference));
      assert.ok(envelope.action!.summary.includes('get-sum'));
      const expiresIn = Date.parse(envelope.expires_at!) - started;
      assert.ok(Math.abs(expiresIn - DEADLINE_MS) < 60_000, `deadline in ${expiresIn} ms`);

      // The connection is not blocked: other calls go through while the hold waits.
      assert.deepEqual((await callTool(client, 'echo', { message: 'meanwhile' })).content, [
        { type: 'text', text: 'Echo: meanwhile' },
      ]);
      const record = await getRecord(key, envelope.reference);
      assert.equal(record.body.status, 'pending');
      assert.equal(record.body.connection, 'Everything');
      assert.deepEqual(record.body.agent_identity, { id: 'held-bot', label: null });

      // Identical repeats are the same operation.
      for (let i = 0; i < 5; i++) {
        const again = envelopeOf(await callTool(client, 'get-sum', args));
        assert.equal(again.status, 'held');
        assert.equal(again.reference, envelope.reference);
        assert.equal(again.deduplicated, true);
      }
      assert.deepEqual(await holdIds(workspace, 'get-sum'), [envelope.reference]);
      // service_check_status while it waits: the same envelope.
      const waiting = envelopeOf(await checkStatus(client, envelope.reference));
      assert.equal(waiting.status, 'held');
      assert.equal(waiting.reference, envelope.reference);

      // Approval: the service calls upstream right away, not when the agent asks again.
      await decideAs(t, workspace.id, envelope.reference, 'approve');
      const done = await executed(workspace, envelope.reference);
      assert.equal(done.status, 'executed');
      assert.equal((await getRecord(key, envelope.reference)).body.status, 'executed');
      const upstreamResult = (await direct.callTool({ name: 'get-sum', arguments: args })) as ToolResult;
      assert.deepEqual(upstreamResult.content, [{ type: 'text', text: 'The sum of 2 and 3 is 5.' }]);

      // The identical call now answers with the envelope and the result, without running it again.
      for (let i = 0; i < 3; i++) {
        const repeat = await callTool(client, 'get-sum', args);
        const result = envelopeOf(repeat);
        assert.equal(result.status, 'executed');
        assert.equal(result.reference, envelope.reference);
        assert.deepEqual([result.terminal, result.retryable, result.retry], [true, false, 'none']);
        assert.deepEqual(repeat.content.slice(2), upstreamResult.content);
        assert.notEqual(repeat.isError, true);
      }
      const checked = await checkStatus(client, envelope.reference);
      const checkedEnvelope = envelopeOf(checked);
      assert.equal(checkedEnvelope.status, 'executed');
      assert.equal(checkedEnvelope.reference, envelope.reference);
      assert.deepEqual(checkedEnvelope.action, envelope.action);
      assert.deepEqual(checked.content.slice(2), upstreamResult.content);

      assert.deepEqual(await holdIds(workspace, 'get-sum'), [envelope.reference]);
      const trail = await evidenceOf(workspace, envelope.reference);
      assert.equal(trail.filter((type) => type === 'hold.executed').length, 1, trail.join(', '));
      assert.ok(!trail.includes('hold.failed'));
      const executedEntry = (await evidence(workspace)).find(
        (entry) => entry.type === 'hold.executed' && entry.data.hold === envelope.reference,
      )!;
      assert.equal(executedEntry.data.is_error, false);
      assert.equal(executedEntry.data.result_sha256, sha256Hex(canonicalJson(upstreamResult)));

      // A reference that does not exist (or is another workspace's) is unknown.
      const unknown = envelopeOf(await checkStatus(client, 'svc_pa_AAAAAAAAAAAAAAAAAAAAAA'));
      assert.equal(unknown.status, 'unknown_reference');
      assert.equal(unknown.reference, 'svc_pa_AAAAAAAAAAAAAAAAAAAAAA');
      assert.deepEqual([unknown.terminal, unknown.retryable, unknown.retry], [true, false, 'none']);
      const other = await workspaceWith();
      const stranger = await connect(other.key);
      assert.equal(envelopeOf(await checkStatus(stranger, envelope.reference)).status, 'unknown_reference');
      assert.equal(envelopeOf(await checkStatus(client, 'not a reference')).status, 'unknown_reference');
    });

    test('after approval GET shows execution executed with the upstream result', async () => {
      const { workspace, key } = await workspaceWith();
      const client = await connect(key);
      const { reference } = envelopeOf(await callTool(client, 'get-sum', { a: 20, b: 22 }));
      assert.equal((await getRecord(key, reference)).body.execution, null, 'null until run');
      await decideAs(t, workspace.id, reference, 'approve');
      const body = await until('execution in the record', async () => {
        const record = await getRecord(key, reference);
        return record.body.execution ? record.body : undefined;
      });
      assert.equal(body.status, 'executed');
      assert.equal(body.execution.status, 'executed');
      assert.deepEqual(
        body.execution.result,
        await direct.callTool({ name: 'get-sum', arguments: { a: 20, b: 22 } }),
      );
    });

    test('a human rejection: envelope denied, retry never, on repeat and on check; nothing runs', async () => {
      const { workspace, key } = await workspaceWith();
      const client = await connect(key);
      const args = { a: 7, b: 8 };
      const { reference } = envelopeOf(await callTool(client, 'get-sum', args));
      await decideAs(t, workspace.id, reference, 'reject', 'admin@acme.test', 'not today');
      // A rejection is an error for the model (decisions.md, amendments): the action did not happen.
      const rejected = await callTool(client, 'get-sum', args);
      assert.equal(rejected.isError, true);
      const repeat = envelopeOf(rejected);
      assert.equal(repeat.reference, reference);
      assert.equal(repeat.status, 'denied');
      assert.deepEqual([repeat.terminal, repeat.retryable, repeat.retry], [true, false, 'never']);
      const checked = await checkStatus(client, reference);
      assert.equal(checked.isError, true);
      assert.equal(checked.content.length, 2, 'no result blocks');
      assert.equal(envelopeOf(checked).status, 'denied');
      assert.equal(envelopeOf(checked).retry, 'never');
      // The execution worker has had a round after the rejection, and finished what it started.
      await t.settled();
      const { body } = await getRecord(key, reference);
      assert.equal(body.status, 'rejected');
      assert.deepEqual([body.decision.verdict, body.decision.reason], ['reject', 'not today']);
      const trail = await evidenceOf(workspace, reference);
      assert.ok(!trail.includes('hold.executed') && !trail.includes('hold.failed'), trail.join(', '));
      assert.deepEqual(await holdIds(workspace, 'get-sum'), [reference]);
    });

    test('a rejected proxy hold has execution null', async () => {
      const { workspace, key } = await workspaceWith();
      const client = await connect(key);
      const { reference } = envelopeOf(await callTool(client, 'get-sum', { a: 70, b: 80 }));
      await decideAs(t, workspace.id, reference, 'reject');
      const { body } = await getRecord(key, reference);
      assert.ok('execution' in body);
      assert.equal(body.execution, null);
    });

    test('the deadline passes: envelope expired, retry new_request; the identical call is a new hold', async () => {
      const { key, workspace } = await workspaceWith();
      const client = await connect(key);
      const args = { a: 5, b: 6 };
      const first = envelopeOf(await callTool(client, 'get-sum', args));
      t.clock.advance(DEADLINE_MS + 1000);
      try {
        assert.equal((await getRecord(key, first.reference)).body.status, 'expired');
        const checkedResult = await checkStatus(client, first.reference);
        assert.equal(checkedResult.isError, true, 'an expiry is an error for the model');
        const checked = envelopeOf(checkedResult);
        assert.equal(checked.status, 'expired');
        assert.deepEqual([checked.terminal, checked.retryable, checked.retry], [true, true, 'new_request']);
        const again = envelopeOf(await callTool(client, 'get-sum', args));
        assert.equal(again.status, 'held');
        assert.notEqual(again.reference, first.reference);
        assert.equal(again.deduplicated, undefined);
        assert.deepEqual(await holdIds(workspace, 'get-sum'), [first.reference, again.reference]);
        // The old one stays expired.
        assert.equal(envelopeOf(await checkStatus(client, first.reference)).status, 'expired');
      } finally {
        t.clock.advance(-(DEADLINE_MS + 1000));
      }
    });

    test('past the deadline but before the deadline sweep: check and repeat already say expired / new request', async () => {
      // A sweep interval longer than the test: only the proxy's own reads can notice the deadline.
      const slow = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', DEADLINE_SWEEP_MS: '600000' },
      });
      let client: Client | undefined;
      try {
        const { key } = await slow.workspace({
          config: `${ADMIN}mcp_servers:\n  - { slug: every, name: Everything, url: "${upstream.url}" }\n`,
        });
        client = new Client({ name: 'mcp-test', version: '1' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${slow.url}/mcp/every`), {
            requestInit: { headers: { Authorization: `Bearer ${key}` } },
          }),
        );
        const args = { a: 11, b: 12 };
        const first = envelopeOf(await callTool(client, 'get-sum', args));
        await slow.clock.advance(DEADLINE_MS + 1000, { runWorkers: false });
        assert.equal(envelopeOf(await checkStatus(client, first.reference)).status, 'expired');
        const again = envelopeOf(await callTool(client, 'get-sum', args));
        assert.notEqual(again.reference, first.reference, 'an identical call after the deadline is new');
        assert.equal(again.status, 'held');
      } finally {
        await client?.close().catch(() => {});
        await slow.close();
      }
    });

    test('a deny classification or deny rule: -32003 "Denied by policy" with the envelope; repeats alike', async () => {
      const { workspace, key } = await workspaceWith(
        'tools:\n  - { connection: Everything, tool: get-env, classification: deny }\n' +
          'rules:\n  - name: No big sums\n    connection: Everything\n    tool: get-sum\n' +
          '    when: [ { arg: a, op: gt, value: 100 } ]\n    effect: deny\n    reason: Sums that big are not allowed\n',
      );
      const client = await connect(key);
      const error = await rpcFailure(callTool(client, 'get-env', {}));
      assert.ok(error instanceof ProtocolError, String(error));
      assert.equal(error.code, -32003);
      assert.match(error.message, /Denied by policy/);
      const service = (error.data as { service: Envelope }).service;
      assert.equal(service.status, 'denied');
      assert.deepEqual([service.terminal, service.retryable, service.retry], [true, false, 'never']);
      assert.match(service.reference, /^svc_pa_/);
      assert.equal(service.action?.tool, 'get-env');
      const repeat = await rpcFailure(callTool(client, 'get-env', {}));
      assert.equal(repeat.code, -32003);
      assert.equal((repeat.data as { service: Envelope }).service.reference, service.reference);
      assert.equal((repeat.data as { service: Envelope }).service.status, 'denied');
      assert.deepEqual(await holdIds(workspace, 'get-env'), [service.reference]);
      // On the wire: exactly the contract's message and data.
      const rpc = await rawSession(key);
      const raw = await rpc('tools/call', { name: 'get-env', arguments: {} });
      assert.equal(raw.result, undefined);
      assert.equal(raw.error.code, -32003);
      assert.equal(raw.error.message, 'Denied by policy');
      assert.deepEqual(Object.keys(raw.error.data), ['service']);
      assert.equal(raw.error.data.service.status, 'denied');
      // Another session, the same caller: the same denial (the session is never part of the call's key).
      assert.equal(raw.error.data.service.reference, service.reference);
      const record = (await getRecord(key, service.reference)).body;
      assert.equal(record.status, 'rejected');
      assert.deepEqual([record.decision.verdict, record.decision.channel], ['reject', 'rule']);

      const byRule = await rpcFailure(callTool(client, 'get-sum', { a: 101, b: 1 }));
      assert.equal(byRule.code, -32003);
      const ruled = (byRule.data as { service: Envelope }).service;
      assert.equal(ruled.status, 'denied');
      assert.match(ruled.message, /Sums that big are not allowed/);
      assert.equal(
        (await getRecord(key, ruled.reference)).body.decision.reason,
        'Sums that big are not allowed',
      );
      // The same tool with arguments the rule does not match is only held.
      assert.equal(envelopeOf(await callTool(client, 'get-sum', { a: 1, b: 1 })).status, 'held');
      assert.equal(envelopeOf(await checkStatus(client, ruled.reference)).status, 'denied');
    });

    test('upstream down at execution: failed, envelope error, new request; after a restart it runs', async () => {
      const flaky = await startEverything();
      try {
        const { workspace, key } = await workspaceWith('', flaky.url, 'flaky');
        const client = await connect(key, { slug: 'flaky' });
        const args = { a: 9, b: 10 };
        const first = envelopeOf(await callTool(client, 'get-sum', args));
        await flaky.stop();
        await decideAs(t, workspace.id, first.reference, 'approve');
        const failed = await executed(workspace, first.reference);
        assert.equal(failed.status, 'failed');
        assert.equal((await getRecord(key, first.reference)).body.status, 'failed');
        const checked = await checkStatus(client, first.reference);
        assert.equal(checked.content.length, 2);
        const error = envelopeOf(checked);
        assert.equal(error.status, 'error');
        assert.deepEqual([error.terminal, error.retryable, error.retry], [true, true, 'new_request']);
        const trail = await evidenceOf(workspace, first.reference);
        assert.deepEqual(
          trail.filter((type) => type.startsWith('hold.executed') || type.startsWith('hold.failed')),
          ['hold.failed'],
        );

        await flaky.start();
        const second = envelopeOf(await callTool(client, 'get-sum', args));
        assert.equal(second.status, 'held');
        assert.notEqual(second.reference, first.reference);
        await decideAs(t, workspace.id, second.reference, 'approve');
        assert.equal((await executed(workspace, second.reference)).status, 'executed');
        const result = await callTool(client, 'get-sum', args);
        assert.equal(envelopeOf(result).status, 'executed');
        assert.equal(envelopeOf(result).reference, second.reference);
        assert.deepEqual(result.content.slice(2), [{ type: 'text', text: 'The sum of 9 and 10 is 19.' }]);
        assert.equal(envelopeOf(await checkStatus(client, first.reference)).status, 'error');
      } finally {
        await flaky.stop();
      }
    });

    test('upstream down: GET shows execution failed with an error', async () => {
      const flaky = await startEverything();
      try {
        const { workspace, key } = await workspaceWith('', flaky.url, 'flaky');
        const client = await connect(key, { slug: 'flaky' });
        const { reference } = envelopeOf(await callTool(client, 'get-sum', { a: 1, b: 99 }));
        await flaky.stop();
        await decideAs(t, workspace.id, reference, 'approve');
        await executed(workspace, reference);
        const { body } = await getRecord(key, reference);
        assert.equal(body.execution?.status, 'failed');
        assert.equal(typeof body.execution.error.code, 'number');
        assert.equal(typeof body.execution.error.message, 'string');
      } finally {
        await flaky.stop();
      }
    });

    test('a held call to a tool with an outputSchema is no error and passes the client’s check; executed carries structuredContent', async () => {
      const { workspace, key } = await workspaceWith();
      const client = await connect(key);
      // The client validates results against the listed outputSchema, which also takes the held answer.
      const listed = (await client.listTools()).tools.find((tool) => tool.name === 'get-structured-content')!;
      assert.equal(listed.outputSchema?.type, 'object');
      assert.equal((listed.outputSchema?.anyOf as unknown[]).length, 2);
      const args = { location: 'Chicago' };
      const held = await callTool(client, 'get-structured-content', args);
      assert.equal(held.isError, undefined, 'a waiting call is no failure');
      assert.equal(held.content.length, 2);
      const envelope = envelopeOf(held);
      assert.equal(envelope.status, 'held');
      assert.deepEqual(held.structuredContent, { service: envelope });
      const repeat = await callTool(client, 'get-structured-content', args);
      assert.equal(envelopeOf(repeat).deduplicated, true);
      assert.equal(repeat.isError, undefined);
      // The v1 SDK's client checks with its own validator: it takes the held answer too.
      const v1 = new ClientV1({ name: 'v1', version: '1' });
      await v1.connect(
        new TransportV1(new URL(`${t.url}/mcp/every`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      try {
        await v1.listTools();
        const fromV1 = await v1.callTool({ name: 'get-structured-content', arguments: args });
        assert.equal(envelopeOf(fromV1 as ToolResult).reference, envelope.reference);
      } finally {
        await v1.close();
      }

      await decideAs(t, workspace.id, envelope.reference, 'approve');
      assert.equal((await executed(workspace, envelope.reference)).status, 'executed');
      const upstreamResult = (await direct.callTool({
        name: 'get-structured-content',
        arguments: args,
      })) as ToolResult;
      const result = await callTool(client, 'get-structured-content', args);
      assert.notEqual(result.isError, true);
      assert.equal(envelopeOf(result).status, 'executed');
      assert.deepEqual(result.structuredContent, upstreamResult.structuredContent);
      assert.deepEqual(result.structuredContent, {
        temperature: 36,
        conditions: 'Light rain / drizzle',
        humidity: 82,
      });
      assert.deepEqual(result.content.slice(2), upstreamResult.content);
    });

    test('HTTP: 401 with a bare Bearer challenge, 404 for unknown or foreign servers, 403 for a foreign Origin', async () => {
      const { key } = await workspaceWith();
      const other = await t.workspace({
        config: `${ADMIN}mcp_servers:\n  - { slug: theirs, name: Theirs, url: "${upstream.url}" }\n`,
      });
      const url = `${t.url}/mcp/every`;
      const post = (headers: Record<string, string>, path = url) =>
        fetch(path, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...headers,
          },
          body: JSON.stringify(initialize('2025-06-18')),
        });
      const refused: Record<string, string>[] = [
        {},
        { authorization: 'Bearer svc_live_not_a_key_at_all_00000000' },
        { authorization: `Basic ${Buffer.from(`x:${key}`).toString('base64')}` },
      ];
      for (const headers of refused) {
        const response = await post(headers);
        assert.equal(response.status, 401);
        assert.equal(response.headers.get('www-authenticate'), 'Bearer');
        assert.ok(!/resource_metadata/i.test(await response.text()));
      }
      const auth = { authorization: `Bearer ${key}` };
      assert.equal((await post(auth, `${t.url}/mcp/no-such-server`)).status, 404);
      // Another workspace's key does not reach this workspace's server, and the reverse.
      assert.equal((await post({ authorization: `Bearer ${other.key}` })).status, 404);
      assert.equal((await post(auth, `${t.url}/mcp/theirs`)).status, 404);
      assert.equal((await post({ authorization: `Bearer ${other.key}` }, `${t.url}/mcp/theirs`)).status, 200);
      // Browsers only from our own origin.
      const foreign = await post({ ...auth, origin: 'https://evil.example' });
      assert.equal(foreign.status, 403);
      assert.equal((await post({ ...auth, origin: new URL(t.url).origin })).status, 200);
    });

    test('HTTP: 2025-era sessions (Mcp-Session-Id required, unknown 404, one GET stream, DELETE closes it)', async () => {
      const { key } = await workspaceWith();
      const url = `${t.url}/mcp/every`;
      const headers = {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      };
      const send = (body: unknown, extra: Record<string, string> = {}, method = 'POST') =>
        fetch(url, {
          method,
          headers: { ...headers, ...extra },
          body: method === 'POST' ? JSON.stringify(body) : undefined,
        });
      const init = await send(initialize('2025-06-18'));
      assert.equal(init.status, 200);
      const session = init.headers.get('mcp-session-id');
      assert.ok(session, 'initialize issues Mcp-Session-Id');
      assert.equal((await rpcMessages(init))[0].result.protocolVersion, '2025-06-18');
      const initialized = await send(
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        { 'mcp-session-id': session },
      );
      assert.equal(initialized.status, 202);
      await initialized.arrayBuffer();

      const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
      const missing = await send(list);
      assert.equal(missing.status, 400);
      await missing.arrayBuffer();
      const unknown = await send(list, { 'mcp-session-id': 'mcps_unknownunknownunknownunknow' });
      assert.equal(unknown.status, 404);
      await unknown.arrayBuffer();
      const listed = await send(list, { 'mcp-session-id': session });
      assert.equal(listed.status, 200);
      const names = (await rpcMessages(listed))[0].result.tools.map((tool: { name: string }) => tool.name);
      assert.ok(names.includes('echo') && names.includes('service_check_status'));

      const sessionless = await send(undefined, { accept: 'text/event-stream' }, 'GET');
      assert.equal(sessionless.status, 405);
      await sessionless.arrayBuffer();
      // The session's standing stream: one per session; a second is refused.
      const stream = await send(undefined, { 'mcp-session-id': session, accept: 'text/event-stream' }, 'GET');
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type')!, /^text\/event-stream/);
      const second = await send(undefined, { 'mcp-session-id': session, accept: 'text/event-stream' }, 'GET');
      assert.equal(second.status, 409);
      await second.arrayBuffer();
      const closed = await send(undefined, { 'mcp-session-id': session }, 'DELETE');
      assert.ok(closed.status >= 200 && closed.status < 300, `DELETE answered ${closed.status}`);
      await closed.arrayBuffer();
      // Ending the session ends its stream.
      await stream.arrayBuffer();
      const after = await send(list, { 'mcp-session-id': session });
      assert.equal(after.status, 404);
      await after.arrayBuffer();
      const deleteAgain = await send(undefined, { 'mcp-session-id': session }, 'DELETE');
      assert.equal(deleteAgain.status, 404);
      await deleteAgain.arrayBuffer();
      // A session belongs to its workspace's server.
      const other = await workspaceWith();
      const init2 = await send(initialize('2025-06-18'));
      const session2 = init2.headers.get('mcp-session-id')!;
      await init2.arrayBuffer();
      const foreign = await fetch(url, {
        method: 'POST',
        headers: { ...headers, authorization: `Bearer ${other.key}`, 'mcp-session-id': session2 },
        body: JSON.stringify(list),
      });
      assert.equal(foreign.status, 404);
      await foreign.arrayBuffer();
    });

    test('protocol versions: 2025-03-26, 2025-06-18, SDK legacy 2025-11-25, modern 2026-07-28', async () => {
      const { key, workspace } = await workspaceWith();
      for (const version of ['2025-03-26', '2025-06-18']) {
        const response = await fetch(`${t.url}/mcp/every`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
          body: JSON.stringify(initialize(version)),
        });
        assert.equal(response.status, 200);
        assert.ok(response.headers.get('mcp-session-id'));
        const [answer] = await rpcMessages(response);
        assert.equal(answer.result.protocolVersion, version);
        assert.equal(answer.result.serverInfo.name, 'approvals-proxy');
        assert.ok(answer.result.capabilities.tools);
      }
      const legacy = await connect(key);
      assert.equal(legacy.getNegotiatedProtocolVersion(), '2025-11-25');

      const modern = await connect(key, { negotiation: 'auto', agent: 'modern-bot' });
      assert.equal(modern.getNegotiatedProtocolVersion(), '2026-07-28');
      const { tools } = await modern.listTools();
      assert.ok(tools.some((tool) => tool.name === 'service_check_status'));
      const held = envelopeOf(await callTool(modern, 'get-sum', { a: 3, b: 4 }));
      assert.equal(held.status, 'held');
      // 2026-era requests carry no session: the caller frames a repeat, which is the same hold
      // (mcp-endpoint.test.ts has the rest).
      const repeat = envelopeOf(await callTool(modern, 'get-sum', { a: 3, b: 4 }));
      assert.deepEqual([repeat.reference, repeat.deduplicated], [held.reference, true]);
      await decideAs(t, workspace.id, held.reference, 'approve');
      await executed(workspace, held.reference);
      const result = await checkStatus(modern, held.reference);
      assert.equal(envelopeOf(result).status, 'executed');
      assert.deepEqual(result.content.slice(2), [{ type: 'text', text: 'The sum of 3 and 4 is 7.' }]);
    });

    test('upstream credentials: what upstream receives; agent identity and X-Service-Session', async () => {
      const recorder = await startRecordingUpstream();
      try {
        const { workspace, key } = await t.workspace({
          config:
            `${ADMIN}mcp_servers:\n  - { slug: rec, name: Recorder, url: "${recorder.url}",` +
            ' headers: { Authorization: "Bearer upstream-secret", X-Upstream-Tenant: acme } }\n' +
            'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n',
        });
        const named = await connect(key, { slug: 'rec', agent: 'bot-7', session: 's1' });
        const anonymous = await connect(key, { slug: 'rec' });
        assert.deepEqual(
          (await named.listTools()).tools.map((tool) => tool.name),
          ['record', 'wait', 'service_check_status'],
        );

        const first = envelopeOf(await callTool(named, 'record', { text: 'one' }));
        assert.deepEqual((await getRecord(key, first.reference)).body.agent_identity, {
          id: 'bot-7',
          label: null,
        });
        const second = envelopeOf(await callTool(anonymous, 'record', { text: 'one' }));
        assert.notEqual(second.reference, first.reference);
        assert.deepEqual((await getRecord(key, second.reference)).body.agent_identity, {
          id: `key:${key.slice(0, 12)}`,
          label: null,
        });
        // The session, not the agent, frames identical calls.
        const otherSession = await connect(key, { slug: 'rec', agent: 'bot-7', session: 's2' });
        const third = envelopeOf(await callTool(otherSession, 'record', { text: 'one' }));
        assert.notEqual(third.reference, first.reference);
        const sameSession = await connect(key, { slug: 'rec', agent: 'bot-8', session: 's1' });
        const fourth = envelopeOf(await callTool(sameSession, 'record', { text: 'one' }));
        assert.equal(fourth.reference, first.reference);
        assert.equal(fourth.deduplicated, true);
        assert.equal(recorder.calls.length, 0, 'nothing runs before approval');

        await decideAs(t, workspace.id, first.reference, 'approve');
        assert.equal((await executed(workspace, first.reference)).status, 'executed');
        for (let i = 0; i < 3; i++) {
          const repeat = await callTool(named, 'record', { text: 'one' });
          assert.equal(envelopeOf(repeat).status, 'executed');
          assert.deepEqual(repeat.content.slice(2), [{ type: 'text', text: 'recorded: one' }]);
        }
        assert.deepEqual(
          recorder.calls,
          [{ name: 'record', arguments: { text: 'one' } }],
          'upstream ran it once',
        );

        assert.ok(recorder.requests.length > 0);
        for (const request of recorder.requests) {
          assert.equal(request.headers.authorization, 'Bearer upstream-secret');
          assert.equal(request.headers['x-upstream-tenant'], 'acme');
          for (const [name, value] of Object.entries(request.headers)) {
            assert.ok(!String(value).includes(key), `the client's key leaked upstream in ${name}`);
          }
        }
        // Credentials are never exported.
        assert.deepEqual((await exportConfig(t.service.ctx, workspace)).mcp_servers, [
          { slug: 'rec', name: 'Recorder', url: recorder.url },
        ]);
      } finally {
        await recorder.close();
      }
    });
  });
}
