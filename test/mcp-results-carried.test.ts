/**
 * Issue 43: an allowed call's result waits in the recorder for the next transaction that writes its
 * workspace's chain, most often the next call's submission, and goes in it: a session calling in
 * sequence costs one transaction, one commit and one signed head per call. A transaction that takes
 * a waiting result and is rolled back does not lose it. The recorder here waits a minute before it
 * writes a result itself, so that only the next transaction (or a read) can.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { lockChain } from '../src/services/evidence.ts';
import { getHold } from '../src/services/read-hold.ts';
import { ExecutionRecorder, recordExecution } from '../src/services/record-execution.ts';
import { findHold } from '../src/store/holds.ts';
import { writeTogether } from '../src/store/statements.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call } from './support/http.ts';
import { type SlowUpstream, startSlowUpstream } from './support/mcp-upstream.ts';
import { proxyClient } from './support/proxy-client.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = (url: string) =>
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  `mcp_servers:\n  - { slug: slow, name: Slow, url: "${url}", call_timeout_seconds: 30 }\n` +
  'tools:\n  - { connection: Slow, tool: slow, classification: allow }\n';

/** Longer than any test here: the recorder never writes a result on its own. */
const NEVER_MS = 60_000;

for (const backend of backends) {
  describe(
    `allowed calls' results carried by the next transaction on ${backend.name}`,
    { skip: backend.skip },
    () => {
      let t: TestService;
      let slow: SlowUpstream;
      const clients: Client[] = [];
      let recorder: ExecutionRecorder;
      let original: ExecutionRecorder;
      let labels = 0;

      before(async () => {
        slow = await startSlowUpstream();
        t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
        original = t.service.ctx.executions;
      });
      beforeEach(() => {
        recorder = new ExecutionRecorder(() => t.service.ctx, NEVER_MS);
        t.service.ctx.executions = recorder;
      });
      afterEach(async () => {
        await recorder.close();
        t.service.ctx.executions = original;
      });
      after(async () => {
        try {
          await Promise.all(clients.map((client) => client.close().catch(() => {})));
          await t?.close();
        } finally {
          await slow?.close();
        }
      });

      const slowCall = (client: Client) =>
        client.callTool({ name: 'slow', arguments: { label: `call-${(labels += 1)}`, seconds: 0 } });

      const entries = (workspace: Workspace) =>
        t.service.ctx.db.all<{ seq: number; type: string; data: string }>(
          'SELECT seq, type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        );
      const holdIds = async (workspace: Workspace) =>
        (
          await t.service.ctx.db.all<{ id: string }>(
            'SELECT id FROM holds WHERE workspace_id = $1 ORDER BY created_at, id',
            [workspace.id],
          )
        ).map((row) => row.id);
      const executionStatus = async (workspace: Workspace, id: string) =>
        (
          await t.service.ctx.db.one<{ status: string | null }>(
            'SELECT execution_status AS status FROM holds WHERE workspace_id = $1 AND id = $2',
            [workspace.id, id],
          )
        )?.status;

      /** The seqs of the workspace's heads signed from now on (the signer's input names workspace and seq). */
      function signedHeads(workspace: Workspace) {
        const signer = t.service.ctx.signer;
        const sign = signer.sign;
        const seqs: number[] = [];
        signer.sign = (text) => {
          // A head's input is canonical JSON; anything else signed is not one.
          const signed = (text.startsWith('{') ? JSON.parse(text) : {}) as { orgId?: string; seq?: number };
          if (signed.orgId === workspace.id) seqs.push(signed.seq!);
          return sign.call(signer, text);
        };
        return { seqs, stop: () => (signer.sign = sign) };
      }

      test("a call in sequence: its result goes in the next call's submission, one signed head per call", async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
        const client = await proxyClient(t.url, 'slow', key, clients);
        const signed = signedHeads(workspace);
        try {
          for (let i = 0; i < 5; i++) await slowCall(client);
          const ids = await holdIds(workspace);
          // The last result waits for a next write; the others were written with the calls after them.
          assert.deepEqual(await Promise.all(ids.map((id) => executionStatus(workspace, id))), [
            'executed',
            'executed',
            'executed',
            'executed',
            'running',
          ]);
          assert.equal(signed.seqs.length, 5, 'one signed head per call');
          // A read has it written at once, in a transaction of its own.
          assert.equal((await getHold(t.service.ctx, workspace.id, ids[4]!)).execution?.status, 'executed');
          assert.equal(signed.seqs.length, 6);

          const chain = (await entries(workspace)).filter((entry) => entry.type.startsWith('hold.'));
          const holdOf = (entry: { data: string }) => (JSON.parse(entry.data) as { hold: string }).hold;
          // Each result just before the next call's submission, in the transaction that signed it.
          assert.deepEqual(
            chain.map((entry) => `${entry.type} ${ids.indexOf(holdOf(entry))}`),
            [
              'hold.submitted 0',
              'hold.executed 0',
              'hold.submitted 1',
              'hold.executed 1',
              'hold.submitted 2',
              'hold.executed 2',
              'hold.submitted 3',
              'hold.executed 3',
              'hold.submitted 4',
              'hold.executed 4',
            ],
          );
          const submittedSeqs = chain.filter((entry) => entry.type === 'hold.submitted').map((e) => e.seq);
          assert.deepEqual(signed.seqs, [...submittedSeqs, chain.at(-1)!.seq]);
          const verified = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
          assert.equal((verified.body as { valid: boolean }).valid, true);
        } finally {
          signed.stop();
        }
      });

      test('a transaction that took a waiting result and was rolled back does not lose it', async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
        const client = await proxyClient(t.url, 'slow', key, clients);
        await slowCall(client);
        const [id] = await holdIds(workspace);
        const ctx = t.service.ctx;
        await assert.rejects(
          ctx.db.transaction(async (tx) => {
            const chain = await lockChain(tx, ctx, workspace.id);
            chain.append('test.rolled_back', {});
            await writeTogether(tx, ctx.db.dialect, chain.writes());
            throw new Error('refused after writing');
          }),
          /refused after writing/,
        );
        assert.equal(await executionStatus(workspace, id!), 'running');
        assert.ok(recorder.holds(id!), 'the result is still waiting in the recorder');
        // The next call's submission, then a stop: the result is written once, after its submission.
        await slowCall(client);
        await recorder.close();
        assert.equal(await executionStatus(workspace, id!), 'executed');
        const types = (await entries(workspace)).map((entry) => entry.type);
        assert.ok(!types.includes('test.rolled_back'));
        assert.equal(types.filter((type) => type === 'hold.executed').length, 2);
        const verified = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal((verified.body as { valid: boolean }).valid, true);
      });

      test('the stale sweep meeting a result this transaction carries records one outcome, the result', async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
        const client = await proxyClient(t.url, 'slow', key, clients);
        await slowCall(client);
        const [id] = await holdIds(workspace);
        const ctx = t.service.ctx;
        const hold = (await findHold(ctx.db, workspace.id, id!))!;
        assert.equal(hold.execution?.status, 'running');
        // The sweep found the call stale just before its result came back: its transaction takes the
        // waiting result when it locks the chain, and must then see the call as it will be.
        const recorded = await recordExecution(ctx, hold, {
          status: 'failed',
          startedAt: hold.execution!.startedAt,
          outcome: { code: -32001, message: 'Interrupted', outcome: 'unknown' },
        });
        assert.equal(recorded.status, 'auto_allowed');
        assert.equal(recorded.execution?.status, 'executed');
        assert.equal(await executionStatus(workspace, id!), 'executed');
        const outcomes = (await entries(workspace))
          .filter((entry) => (JSON.parse(entry.data) as { hold?: string }).hold === id)
          .map((entry) => entry.type);
        assert.deepEqual(outcomes, ['hold.submitted', 'hold.executed']);
        assert.equal(recorder.holds(id!), false);
        const verified = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal((verified.body as { valid: boolean }).valid, true);
      });
    },
  );
}
