/**
 * Approval in the client (issue 40): a call held by a rule that says `self_approval` is put to the
 * client that made it for the member it was requested for (a key bound to them), through elicitation,
 * with the official v1 and v2 SDK clients, on both backends. Approved there, the call runs and its
 * result answers the same tools/call; rejected or declined, it is denied; a client without
 * elicitation, a dismissed question, a rule without `self_approval` or an unbound key: held for the
 * approvers as before. Nowhere else may the member approve their own request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, type ClientCapabilities, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceError } from '../src/services/errors.ts';
import { findHold } from '../src/store/holds.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, rpcMessages } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

/** What a client answers an elicitation with. */
type Reply = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, unknown> };

interface Asked {
  message: string;
  requestedSchema: { properties: Record<string, { enum?: string[] }> };
}

const envelopeOf = (result: unknown) => {
  const { content } = result as { content: { text?: string }[] };
  return (JSON.parse(content[1]!.text!) as { service: { status: string; reference: string } }).service;
};
const text = (result: unknown) =>
  (result as { content: { text?: string }[] }).content.map((item) => item.text ?? '').join('\n');

for (const backend of backends) {
  describe(`approval in the MCP client on ${backend.name}`, { skip: backend.skip, timeout: 60_000 }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    const closing: { close(): Promise<void> }[] = [];

    before(async () => {
      upstream = await startRecordingUpstream();
      upstream.offer('note');
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      try {
        await Promise.all(closing.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await upstream?.close();
      }
    });

    // Bob approves `record`, his own calls only in his client; `note` waits for Alice.
    const config = () => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: alice@acme.test, name: Alice, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstream.url}" }
rules:
  - { name: Own records, connection: Recorder, tool: record, effect: approval, approvers: [alice@acme.test, bob@acme.test], self_approval: true }
  - { name: Notes, connection: Recorder, tool: note, effect: approval, approvers: [alice@acme.test] }
`;

    /** A workspace, and a key bound to Bob (his own requests) or to nobody. */
    async function setUp(owner: 'bob@acme.test' | null = 'bob@acme.test') {
      const { workspace } = await t.workspace({ config: config() });
      const bound = await createApiKey(t.service.ctx, {
        workspace,
        env: 'live',
        agent: 'bob-assistant',
        ...(owner ? { owner } : {}),
      });
      return { workspace, key: bound.key };
    }

    /**
     * A v2 client, 2025-era unless `mode` is auto (2026-07-28, no session); with `replies`, it
     * declares elicitation and answers each question in turn.
     */
    async function v2(key: string, replies?: Reply[], mode: 'legacy' | 'auto' = 'legacy') {
      const asked: Asked[] = [];
      const capabilities: ClientCapabilities = replies ? { elicitation: {} } : {};
      const client = new Client(
        { name: 'client-approval', version: '1' },
        { capabilities, versionNegotiation: { mode } },
      );
      if (replies)
        client.setRequestHandler('elicitation/create', (request) => {
          asked.push(request.params as unknown as Asked);
          return replies.shift() as never;
        });
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      closing.push(client);
      return { client, asked };
    }

    /** A v1 client that declares elicitation and answers each question in turn. */
    async function v1(key: string, replies: Reply[]) {
      const asked: Asked[] = [];
      const client = new ClientV1(
        { name: 'client-approval-v1', version: '1' },
        { capabilities: { elicitation: {} } },
      );
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push(request.params as unknown as Asked);
        return replies.shift() as never;
      });
      await client.connect(
        new TransportV1(new URL(`${t.url}/mcp/rec`), {
          requestInit: { headers: { Authorization: `Bearer ${key}` } },
        }),
      );
      closing.push(client);
      return { client, asked };
    }

    async function decisionEntries(workspace: Workspace) {
      const rows = await t.service.ctx.db.all<{ type: string; data: string }>(
        "SELECT type, data FROM evidence WHERE workspace_id = $1 AND type IN ('hold.approved', 'hold.rejected') ORDER BY seq",
        [workspace.id],
      );
      return rows.map((row) => ({ type: row.type, data: JSON.parse(row.data) as Record<string, any> }));
    }

    const approve: Reply = { action: 'accept', content: { decision: 'approve' } };

    test('v2: Bob approves his own call in his client; it runs and answers the same tools/call', async () => {
      const { workspace, key } = await setUp();
      const { client, asked } = await v2(key, [approve]);
      const calls = upstream.calls.length;
      const result = await client.callTool({ name: 'record', arguments: { text: 'v2 approved' } });
      assert.equal(asked.length, 1);
      assert.match(asked[0]!.message, /record\(text="v2 approved"\) on Recorder/);
      assert.deepEqual(asked[0]!.requestedSchema.properties.decision?.enum, ['approve', 'reject']);
      assert.match(text(result), /recorded: v2 approved/);
      assert.equal(envelopeOf(result).status, 'executed');
      assert.equal(result.isError, undefined);
      assert.equal(upstream.calls.length, calls + 1);
      const [entry] = await decisionEntries(workspace);
      assert.equal(entry?.type, 'hold.approved');
      assert.equal(entry?.data.channel, 'mcp_client');
      assert.equal(entry?.data.member.email, 'bob@acme.test');
    });

    test('2026-07-28: asked in an input_required round; the retry approves, then another rejects', async () => {
      const { workspace, key } = await setUp();
      const { client, asked } = await v2(
        key,
        [approve, { action: 'accept', content: { decision: 'reject' } }],
        'auto',
      );
      const calls = upstream.calls.length;
      const approved = await client.callTool({ name: 'record', arguments: { text: '2026 approved' } });
      assert.match(asked[0]!.message, /record\(text="2026 approved"\) on Recorder/);
      assert.match(text(approved), /recorded: 2026 approved/);
      const rejected = await client.callTool({ name: 'record', arguments: { text: '2026 rejected' } });
      assert.equal(envelopeOf(rejected).status, 'denied');
      assert.equal(upstream.calls.length, calls + 1);
      // Asked in rounds, not on a session's stream: the calls came in no session.
      const hold = await findHold(t.service.ctx.db, workspace.id, envelopeOf(rejected).reference);
      assert.equal(hold?.context.mcp_session, undefined);
      assert.deepEqual(
        (await decisionEntries(workspace)).map((e) => [e.type, e.data.channel, e.data.member.email]),
        [
          ['hold.approved', 'mcp_client', 'bob@acme.test'],
          ['hold.rejected', 'mcp_client', 'bob@acme.test'],
        ],
      );
    });

    test('2026-07-28 rounds: the requestState is sealed, and bound to its hold and its caller', async () => {
      const { workspace, key } = await setUp();
      const { key: othersKey } = await createApiKey(t.service.ctx, {
        workspace,
        env: 'live',
        agent: 'bob-assistant',
        owner: 'bob@acme.test',
      });
      /** One stateless tools/call of `record`, as a 2026-07-28 client that takes forms sends it. */
      const round = async (bearer: string, retry: Record<string, unknown> = {}) => {
        const answer = await call(t.url, 'POST', '/mcp/rec', {
          key: bearer,
          headers: {
            accept: 'application/json, text/event-stream',
            'mcp-protocol-version': '2026-07-28',
            'mcp-method': 'tools/call',
            'mcp-name': 'record',
          },
          body: {
            jsonrpc: '2.0',
            id: 1,
            method: 'tools/call',
            params: {
              name: 'record',
              arguments: { text: 'rounds' },
              _meta: {
                'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                'io.modelcontextprotocol/clientInfo': { name: 'rounds', version: '1' },
                'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
              },
              ...retry,
            },
          },
        });
        const [message] = await rpcMessages(new Response(answer.text, { headers: answer.headers }));
        return message as { result?: any; error?: { code: number } };
      };
      const first = await round(key);
      assert.equal(first.result.resultType, 'input_required');
      assert.equal(first.result.inputRequests.approval.method, 'elicitation/create');
      const { requestState } = first.result as { requestState: string };
      const approved = {
        inputResponses: { approval: { action: 'accept', content: { decision: 'approve' } } },
      };
      const forged = `${requestState.slice(0, -4)}AAAA`;
      assert.equal((await round(key, { ...approved, requestState: forged })).error?.code, -32602);
      // Another key of Bob's is another caller: its call is its own hold, which this state is not for.
      const elsewhere = await round(othersKey, { ...approved, requestState });
      assert.equal(JSON.parse(elsewhere.result.content[1].text).service.status, 'held');
      assert.deepEqual(await decisionEntries(workspace), []);
    });

    test('v1: Bob approves in his client; then rejects another call, which is denied and never runs', async () => {
      const { workspace, key } = await setUp();
      const { client, asked } = await v1(key, [
        approve,
        { action: 'accept', content: { decision: 'reject' } },
      ]);
      const approved = await client.callTool({ name: 'record', arguments: { text: 'v1 approved' } });
      assert.match(text(approved), /recorded: v1 approved/);
      const calls = upstream.calls.length;
      const rejected = await client.callTool({ name: 'record', arguments: { text: 'v1 rejected' } });
      assert.equal(asked.length, 2);
      assert.equal(envelopeOf(rejected).status, 'denied');
      assert.equal(rejected.isError, true);
      assert.equal(upstream.calls.length, calls);
      assert.deepEqual(
        (await decisionEntries(workspace)).map((e) => [e.type, e.data.channel, e.data.member.email]),
        [
          ['hold.approved', 'mcp_client', 'bob@acme.test'],
          ['hold.rejected', 'mcp_client', 'bob@acme.test'],
        ],
      );
    });

    test('declined: rejected; dismissed (cancel): held for the approvers, and Bob still cannot approve in the app', async () => {
      const { workspace, key } = await setUp();
      const { client } = await v2(key, [{ action: 'decline' }, { action: 'cancel' }]);
      const declined = await client.callTool({ name: 'record', arguments: { text: 'declined' } });
      assert.equal(envelopeOf(declined).status, 'denied');
      const dismissed = await client.callTool({ name: 'record', arguments: { text: 'dismissed' } });
      const held = envelopeOf(dismissed);
      assert.equal(held.status, 'held');
      assert.equal((await findHold(t.service.ctx.db, workspace.id, held.reference))?.status, 'pending');
      // The rule's self_approval is for his client only: in the app it is his own request still.
      for (const channel of ['inbox', 'email', 'widget'] as const)
        assert.equal(
          (await decideAs(t, workspace.id, held.reference, 'approve', 'bob@acme.test', null, channel))
            .outcome,
          'own_request',
        );
      assert.equal(
        (await decideAs(t, workspace.id, held.reference, 'approve', 'alice@acme.test')).outcome,
        'recorded',
      );
    });

    test('a client without elicitation, a rule without self_approval, an unbound key: never asked, held', async () => {
      const { key } = await setUp();
      const { client: plain } = await v2(key);
      assert.equal(
        envelopeOf(await plain.callTool({ name: 'record', arguments: { text: 'plain' } })).status,
        'held',
      );
      const { client, asked } = await v2(key, [approve]);
      const note = await client.callTool({ name: 'note', arguments: { text: 'note' } });
      assert.equal(envelopeOf(note).status, 'held');
      assert.equal(asked.length, 0);
      const { key: unbound } = await setUp(null);
      const { client: nobodys, asked: none } = await v2(unbound, [approve]);
      const free = await nobodys.callTool({ name: 'record', arguments: { text: 'unbound' } });
      assert.equal(envelopeOf(free).status, 'held');
      assert.equal(none.length, 0);
    });

    test('the file refuses self_approval with four eyes, a signature or passkeys required', async () => {
      const file = (rule: string, extra = '') =>
        `rules:\n  - { name: R, tool: t, effect: approval, self_approval: true${rule} }\n${extra}`;
      const refused = (error: ServiceError) => {
        assert.equal(error.issues[0]?.field, 'rules.0.self_approval');
        return true;
      };
      assert.throws(() => parseConfig(file(', approvals_required: 2')), refused);
      assert.throws(() => parseConfig(file(', signed: true')), refused);
      const { workspace } = await setUp();
      const apply = (text: string) => applyConfig(t.service.ctx, workspace, parseConfig(text));
      await assert.rejects(apply(file('', 'approvals: { require_passkey: true }\n')), refused);
      await apply(file(''));
    });
  });
}
