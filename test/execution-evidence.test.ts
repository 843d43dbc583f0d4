/**
 * Issue 37, an insider who writes the database without holding AUDIT_SIGNING_KEY: an approved MCP
 * call is run only as its evidence has it (services/hold-evidence.ts). The hold's row can be
 * changed; its `hold.submitted` and `hold.approved` cannot, unseen. A call whose row is not as its
 * evidence is not run: the hold fails with the reason, `hold.execution_refused` says so, and
 * `evidence.alert` tells the operators. A call that runs records `arguments_sha256` in
 * `hold.executed`, the hash of what was sent. The Core API answers `approved` only with the approval
 * in the evidence.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { canonicalJson } from '../packages/sdk/src/canonical-json.ts';
import { recordDecision } from '../src/services/decide-hold.ts';
import { openChain } from '../src/services/evidence.ts';
import { sha256Hex } from '../src/services/hashing.ts';
import { getHold } from '../src/services/read-hold.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call } from './support/http.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const ADMINS =
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  '  - { email: bea@acme.test, name: Bea, role: admin }\n';
const LEGIT = { text: 'pay 100 to DE-LEGIT' };
const FORGED = { text: 'pay 100000 to GB-ATTACKER' };

interface ToolResult {
  content: { type: string; text?: string }[];
  isError?: boolean;
}

for (const backend of backends) {
  describe(
    `approved calls are checked against the evidence on ${backend.name}`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let upstream: RecordingUpstream;
      const clients: Client[] = [];

      before(async () => {
        upstream = await startRecordingUpstream();
        t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      });
      after(async () => {
        try {
          await Promise.all(clients.map((client) => client.close().catch(() => {})));
          await t?.close();
        } finally {
          await upstream?.close();
        }
      });

      /** A workspace whose MCP server `rec` holds `record` for approval (two approvals with `four`). */
      async function workspaceWith(options: { four?: boolean } = {}) {
        const rule = options.four
          ? 'rules:\n  - { name: Two, connection: Recorder, tool: record, effect: approval, approvers: ["role:admin"], approvals_required: 2 }\n'
          : '';
        return t.workspace({
          config:
            `${ADMINS}mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n` +
            'tools:\n  - { connection: Recorder, tool: record, classification: approval }\n' +
            '  - { connection: SDK, tool: pay, classification: approval }\n' +
            `webhook: { url: "http://127.0.0.1:9/hook" }\n${rule}`,
        });
      }

      async function connect(key: string) {
        const client = new Client({ name: 'evidence-test', version: '1' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/rec`), {
            requestInit: { headers: { Authorization: `Bearer ${key}` } },
          }),
        );
        clients.push(client);
        return client;
      }

      /** A held `record` call: its reference. */
      async function held(key: string, args: Record<string, unknown>) {
        const client = await connect(key);
        const result = (await client.callTool({ name: 'record', arguments: args })) as ToolResult;
        const envelope = JSON.parse(result.content[1]!.text!).service as {
          status: string;
          reference: string;
        };
        assert.equal(envelope.status, 'held');
        return envelope.reference;
      }

      const callsOf = (text: string) => upstream.calls.filter((c) => c.arguments.text === text);

      async function evidence(workspace: Workspace) {
        const rows = await t.service.ctx.db.all<{ seq: number; type: string; data: string }>(
          'SELECT seq, type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        );
        return rows.map((row) => ({
          seq: Number(row.seq),
          type: row.type,
          text: row.data,
          data: JSON.parse(row.data) as Record<string, any>,
        }));
      }
      const entriesOf = async (workspace: Workspace, holdId: string) =>
        (await evidence(workspace)).filter((entry) => entry.data.hold === holdId);

      /** Waits until the service ran, failed or refused an approved call. */
      const done = (workspace: Workspace, id: string) =>
        until(`hold ${id} to be run or refused`, async () => {
          const hold = await getHold(t.service.ctx, workspace.id, id);
          return hold.status === 'executed' || hold.status === 'failed' ? hold : undefined;
        });

      const verify = async (key: string) =>
        (await call(t.url, 'GET', '/api/v1/audit/verify', { key })).body as { valid: boolean };

      const alerts = async (workspace: Workspace) =>
        (
          await t.service.ctx.db.all<{ body: string }>(
            `SELECT body FROM webhook_events WHERE workspace_id = $1 AND event = 'evidence.alert'`,
            [workspace.id],
          )
        ).map((row) => JSON.parse(row.body) as { id: string; data: Record<string, unknown> });

      /** A refused call: not run, failed with the reason, said so in the evidence and an alert. */
      async function assertRefused(workspace: Workspace, key: string, id: string, reason: string) {
        const hold = await done(workspace, id);
        // The workers had a round after it: nothing more is on its way upstream.
        await t.settled();
        assert.equal(hold.status, 'failed');
        assert.equal(hold.execution?.status, 'failed');
        assert.equal((hold.execution?.outcome as { reason?: string }).reason, reason);
        assert.deepEqual(callsOf(FORGED.text), [], 'the forged call never went upstream');
        assert.deepEqual(callsOf(LEGIT.text), [], 'nor the call as submitted');
        const trail = await entriesOf(workspace, id);
        assert.deepEqual(
          trail.map((entry) => entry.type).filter((type) => type !== 'hold.approval_recorded'),
          trail.some((entry) => entry.type === 'hold.approved')
            ? ['hold.submitted', 'hold.approved', 'hold.execution_refused']
            : ['hold.submitted', 'hold.execution_refused'],
        );
        const refused = trail.at(-1)!;
        assert.deepEqual(refused.data, { hold: id, reason });
        // Never the arguments' values: not in the entry, the hold's error, nor the alert.
        for (const text of [refused.text, JSON.stringify(hold.execution?.outcome)])
          assert.ok(!text.includes('ATTACKER') && !text.includes('DE-LEGIT'), text);
        const alert = (await alerts(workspace)).find((body) => body.data.hold === id);
        assert.ok(alert, 'an evidence.alert for the operators');
        assert.equal(alert.data.state, 'execution_refused');
        assert.equal(alert.data.reason, reason);
        assert.ok(!JSON.stringify(alert).includes('ATTACKER'));
        // The agent is told it was not carried out.
        const record = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.equal(record.body.status, 'failed');
        assert.equal(record.body.execution.error.reason, reason);
        // The chain is intact: what happened is in it, and nothing was signed that did not happen.
        assert.equal((await verify(key)).valid, true);
        assert.ok(!trail.some((entry) => entry.type === 'hold.executed' || entry.type === 'hold.failed'));
      }

      test('a normal approved call runs once, as submitted; hold.executed carries arguments_sha256', async () => {
        const { workspace, key } = await workspaceWith();
        const id = await held(key, { text: 'pay 5 to DE-NORMAL', n: 1 });
        await decideAs(t, workspace.id, id, 'approve');
        assert.equal((await done(workspace, id)).status, 'executed');
        await t.settled();
        assert.deepEqual(callsOf('pay 5 to DE-NORMAL'), [
          { name: 'record', arguments: { text: 'pay 5 to DE-NORMAL', n: 1 } },
        ]);
        const trail = await entriesOf(workspace, id);
        assert.deepEqual(
          trail.map((entry) => entry.type),
          ['hold.submitted', 'hold.approved', 'hold.executed'],
        );
        const [submitted, , executed] = trail;
        assert.equal(executed!.data.arguments_sha256, sha256Hex(canonicalJson(submitted!.data.arguments)));
        assert.equal(
          executed!.data.arguments_sha256,
          sha256Hex(canonicalJson({ n: 1, text: 'pay 5 to DE-NORMAL' })),
        );
        assert.deepEqual(await alerts(workspace), []);
      });

      test('four eyes: the call runs once both approvals are in the evidence', async () => {
        const { workspace, key } = await workspaceWith({ four: true });
        const id = await held(key, { text: 'pay 7 to DE-FOUR' });
        await decideAs(t, workspace.id, id, 'approve');
        await t.settled();
        assert.deepEqual(callsOf('pay 7 to DE-FOUR'), [], 'one approval of two: not run');
        await decideAs(t, workspace.id, id, 'approve', 'bea@acme.test');
        assert.equal((await done(workspace, id)).status, 'executed');
        assert.equal(callsOf('pay 7 to DE-FOUR').length, 1);
        const trail = await entriesOf(workspace, id);
        assert.deepEqual(
          trail.map((entry) => entry.type),
          ['hold.submitted', 'hold.approval_recorded', 'hold.approved', 'hold.executed'],
        );
        // The last approval names the earlier one's entry.
        assert.deepEqual(trail[2]!.data.approvals_before, [trail[1]!.seq]);
      });

      test('four eyes: approvals counted up in the row, then one real approval: not run', async () => {
        const { workspace, key } = await workspaceWith({ four: true });
        const id = await held(key, LEGIT);
        await t.service.ctx.db.run('UPDATE holds SET approvals_received = 1 WHERE id = $1', [id]);
        // The one real approval completes the count the row says: approved, by one member alone.
        const decided = await decideAs(t, workspace.id, id, 'approve');
        assert.equal(decided.hold.status, 'approved');
        await assertRefused(workspace, key, id, 'approval_not_in_evidence');
      });

      test("the red team's attack: a pending hold's arguments changed and its status flipped to approved", async () => {
        const { workspace, key } = await workspaceWith();
        const id = await held(key, LEGIT);
        await t.service.ctx.db.run(`UPDATE holds SET arguments = $2, status = 'approved' WHERE id = $1`, [
          id,
          JSON.stringify(FORGED),
        ]);
        t.service.ctx.holdEvents.publish(id, workspace.id);
        await assertRefused(workspace, key, id, 'call_not_as_submitted');
      });

      test('arguments changed after the approval, before the call ran: not run', async () => {
        const { workspace, key } = await workspaceWith();
        const id = await held(key, LEGIT);
        const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
        // The approval and the writer's change commit together: the worker never sees the one without the other.
        await t.service.ctx.db.transaction(async (tx) => {
          const chain = await openChain(tx, t.service.ctx, workspace.id);
          const decided = await recordDecision(tx, t.service.ctx, chain, {
            workspaceId: workspace.id,
            holdId: id,
            memberId: member.id,
            verdict: 'approve',
            channel: 'inbox',
          });
          assert.equal(decided.outcome, 'recorded');
          await tx.run('UPDATE holds SET arguments = $2 WHERE id = $1', [id, JSON.stringify(FORGED)]);
        });
        t.service.ctx.holdEvents.publish(id, workspace.id);
        await assertRefused(workspace, key, id, 'call_not_as_submitted');
      });

      test('status flipped to approved without any approval: not run', async () => {
        const { workspace, key } = await workspaceWith();
        const id = await held(key, LEGIT);
        await t.service.ctx.db.run(`UPDATE holds SET status = 'approved' WHERE id = $1`, [id]);
        t.service.ctx.holdEvents.publish(id, workspace.id);
        await assertRefused(workspace, key, id, 'approval_not_in_evidence');
      });

      test("the approval's seq pointed at another hold's approval: not run", async () => {
        const { workspace, key } = await workspaceWith();
        const other = await held(key, { text: 'pay 1 to DE-OTHER' });
        await decideAs(t, workspace.id, other, 'approve');
        await done(workspace, other);
        const id = await held(key, LEGIT);
        const approvedSeq = (await t.service.ctx.db.one<{ seq: number }>(
          'SELECT approved_seq AS seq FROM holds WHERE id = $1',
          [other],
        ))!.seq;
        await t.service.ctx.db.run(`UPDATE holds SET status = 'approved', approved_seq = $2 WHERE id = $1`, [
          id,
          approvedSeq,
        ]);
        t.service.ctx.holdEvents.publish(id, workspace.id);
        await assertRefused(workspace, key, id, 'approval_not_in_evidence');
      });

      test('a run call set back to approved in the row is not run again (a replay)', async () => {
        const { workspace, key } = await workspaceWith();
        const id = await held(key, { text: 'pay 9 to DE-ONCE' });
        await decideAs(t, workspace.id, id, 'approve');
        assert.equal((await done(workspace, id)).status, 'executed');
        await t.service.ctx.db.run(
          `UPDATE holds SET status = 'approved', execution_status = NULL, execution_started_at = NULL,
             execution_completed_at = NULL, execution_outcome = NULL WHERE id = $1`,
          [id],
        );
        t.service.ctx.holdEvents.publish(id, workspace.id);
        const hold = await done(workspace, id);
        await t.settled();
        assert.equal(hold.status, 'failed');
        assert.equal((hold.execution?.outcome as { reason?: string }).reason, 'already_run');
        assert.equal(callsOf('pay 9 to DE-ONCE').length, 1, 'run once, not again');
        assert.deepEqual(
          (await entriesOf(workspace, id)).map((entry) => [entry.type, entry.data.reason]),
          [
            ['hold.submitted', null],
            ['hold.approved', undefined],
            ['hold.executed', undefined],
            ['hold.execution_refused', 'already_run'],
          ],
        );
        assert.equal((await verify(key)).valid, true);
      });

      test('Core API: a hold flipped to approved is answered pending; approved once the approval is in the evidence', async () => {
        const { workspace, key } = await workspaceWith();
        const created = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: {
            tool_name: 'pay',
            arguments: { amount: 100, to: 'DE-LEGIT' },
            agent_identity: { id: 'payer' },
            idempotency_key: `k-${Date.now()}-${Math.random()}`,
          },
        });
        assert.equal(created.body.status, 'pending');
        const id = created.body.id as string;
        await t.service.ctx.db.run(
          `UPDATE holds SET status = 'approved', verdict = 'approve' WHERE id = $1`,
          [id],
        );
        const read = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.equal(read.body.status, 'pending');
        assert.equal(read.body.decision, null);
        const waited = await call(t.url, 'POST', `/api/v1/holds/${id}/wait`, {
          key,
          body: { timeout_seconds: 1 },
        });
        assert.equal(waited.body.status, 'pending');

        // A real approval of another hold answers approved.
        const real = await call(t.url, 'POST', '/api/v1/holds', {
          key,
          body: {
            tool_name: 'pay',
            arguments: { amount: 5, to: 'DE-REAL' },
            agent_identity: { id: 'payer' },
            idempotency_key: `k-${Date.now()}-${Math.random()}`,
          },
        });
        await decideAs(t, workspace.id, real.body.id, 'approve');
        assert.equal(
          (await call(t.url, 'GET', `/api/v1/holds/${real.body.id}`, { key })).body.status,
          'approved',
        );
        const waitedReal = await call(t.url, 'POST', `/api/v1/holds/${real.body.id}/wait`, {
          key,
          body: { timeout_seconds: 1 },
        });
        assert.equal(waitedReal.body.status, 'approved');
      });
    },
  );
}
