/**
 * An allowed call through the MCP proxy makes one durable write before it goes upstream (issue 22):
 * its hold, stored as running. The upstream's result is answered at once and recorded right after,
 * with whatever other results came meanwhile, in one transaction; a process that dies in between
 * leaves a running call, which the stale sweep marks failed with outcome unknown, never lost silently.
 * The chain's lock is held by a transaction of the test's own, as a busy workspace would hold it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { failStaleExecutions, STALE_CLAIM_MS } from '../src/services/execute-approved.ts';
import { getHold } from '../src/services/read-hold.ts';
import { lockChainHead } from '../src/store/evidence.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call } from './support/http.ts';
import { type SlowUpstream, startSlowUpstream } from './support/mcp-upstream.ts';
import { proxyClient } from './support/proxy-client.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const CONFIG = (url: string) =>
  'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
  `mcp_servers:\n  - { slug: slow, name: Slow, url: "${url}", call_timeout_seconds: 30 }\n` +
  'tools:\n  - { connection: Slow, tool: slow, classification: allow }\n';

type ToolResult = { content: { type: string; text?: string }[]; isError?: boolean };

for (const backend of backends) {
  describe(`allowed MCP calls' results on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let slow: SlowUpstream;
    const clients: Client[] = [];
    let labels = 0;
    const label = () => `call-${(labels += 1)}`;

    before(async () => {
      slow = await startSlowUpstream();
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      try {
        await Promise.all(clients.map((client) => client.close().catch(() => {})));
        await t?.close();
      } finally {
        await slow?.close();
      }
    });

    const connect = (key: string) => proxyClient(t.url, 'slow', key, clients);

    const slowCall = (client: Client, args: { label: string; seconds: number; progress?: boolean }) =>
      client.callTool({ name: 'slow', arguments: args }, { timeout: 30_000 }) as Promise<ToolResult>;

    /** The stored row of the workspace's newest hold, as the database has it (no waiting for results). */
    const storedHold = (workspace: Workspace) =>
      t.service.ctx.db.one<{ id: string; status: string; executionStatus: string | null }>(
        `SELECT id, status, execution_status AS "executionStatus" FROM holds
         WHERE workspace_id = $1 ORDER BY created_at DESC, id LIMIT 1`,
        [workspace.id],
      );
    const evidenceTypes = async (workspace: Workspace) =>
      (
        await t.service.ctx.db.all<{ type: string }>(
          'SELECT type FROM evidence WHERE workspace_id = $1 ORDER BY seq',
          [workspace.id],
        )
      ).map((entry) => entry.type);

    /** Holds the workspace's chain lock in a transaction of its own until `release` is called. */
    async function holdChainLock(workspace: Workspace) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const done = t.service.ctx.db.transaction(async (tx) => {
        await lockChainHead(tx, workspace.id);
        locked();
        await released;
      });
      await isLocked;
      return async () => {
        release();
        await done;
      };
    }

    test('the hold is stored as running before the call goes upstream', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
      const client = await connect(key);
      const name = label();
      const answer = slowCall(client, { label: name, seconds: 1 });
      await until('the call to reach the upstream', () => slow.call(name));
      const stored = await storedHold(workspace);
      assert.equal(stored?.status, 'auto_allowed');
      assert.equal(stored?.executionStatus, 'running');
      assert.equal((await answer).content[0]?.text, 'slept 1 s');
    });

    test('the answer does not wait for its result to be recorded; the result follows, once', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
      const client = await connect(key);
      const name = label();
      const answer = slowCall(client, { label: name, seconds: 1 });
      await until('the call to reach the upstream', () => slow.call(name));
      // The workspace's chain is busy (a long decision, a batch of submissions): recording must wait.
      const unlock = await holdChainLock(workspace);
      try {
        // 10 s: far more than the 1 s call; an answer that waited for the lock never comes meanwhile.
        const bound = new Promise<'waited'>((resolve) => setTimeout(resolve, 10_000, 'waited').unref());
        const first = await Promise.race([answer, bound]);
        assert.notEqual(first, 'waited', 'the answer waited for the database');
        assert.equal((first as ToolResult).content[0]?.text, 'slept 1 s');
      } finally {
        // (Nothing else reads meanwhile: on SQLite the lock is the whole database's.)
        await unlock();
      }
      const { id } = (await storedHold(workspace))!;
      await until('the result to be recorded', async () =>
        (await storedHold(workspace))?.executionStatus === 'executed' ? true : undefined,
      );
      const hold = await getHold(t.service.ctx, workspace.id, id);
      assert.equal(hold.status, 'auto_allowed');
      assert.deepEqual((hold.execution?.outcome as ToolResult).content, [
        { type: 'text', text: 'slept 1 s' },
      ]);
      assert.equal((await evidenceTypes(workspace)).filter((type) => type === 'hold.executed').length, 1);
    });

    test('a hold read through the API right after the answer has its result', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
      const client = await connect(key);
      for (let i = 0; i < 5; i++) {
        await slowCall(client, { label: label(), seconds: 0 });
        const { id } = (await storedHold(workspace))!;
        const read = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
        assert.equal(read.status, 200);
        const body = read.body as { status: string; execution: { status: string } | null };
        assert.equal(body.status, 'auto_allowed');
        assert.equal(body.execution?.status, 'executed');
      }
    });

    test('calls go upstream over kept connections: more calls open no new one', async () => {
      const { key } = await t.workspace({ config: CONFIG(slow.url) });
      const client = await connect(key);
      await slowCall(client, { label: label(), seconds: 0 });
      const opened = slow.connections();
      for (let i = 0; i < 20; i++) await slowCall(client, { label: label(), seconds: 0 });
      assert.equal(slow.connections(), opened, 'twenty calls in a row opened connections');
      // Four at once may open up to three more.
      await Promise.all(Array.from({ length: 4 }, () => slowCall(client, { label: label(), seconds: 0 })));
      assert.ok(
        slow.connections() <= opened + 3,
        `${slow.connections() - opened} connections for 4 calls at once`,
      );
    });

    test('many calls at once: every result recorded, the chain intact', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
      const sessions = await Promise.all(Array.from({ length: 4 }, () => connect(key)));
      const names = Array.from({ length: 40 }, () => label());
      await Promise.all(
        names.map((name, i) => slowCall(sessions[i % sessions.length]!, { label: name, seconds: 0 })),
      );
      await until('every result to be recorded', async () => {
        const running = await t.service.ctx.db.one<{ count: number }>(
          `SELECT COUNT(*) AS count FROM holds WHERE workspace_id = $1 AND execution_status = 'running'`,
          [workspace.id],
        );
        return Number(running?.count) === 0 ? true : undefined;
      });
      const types = await evidenceTypes(workspace);
      assert.equal(types.filter((type) => type === 'hold.executed').length, 40);
      const verified = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal((verified.body as { valid: boolean }).valid, true);
    });

    test(
      'the stale sweep leaves alone a call whose result this instance still holds, waiting for the database',
      { skip: backend.name === 'sqlite' && 'on SQLite the held lock would stop the sweep itself' },
      async () => {
        const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
        const client = await connect(key);
        const name = label();
        const answer = slowCall(client, { label: name, seconds: 1 });
        await until('the call to reach the upstream', () => slow.call(name));
        const { id } = (await storedHold(workspace))!;
        const unlock = await holdChainLock(workspace);
        try {
          assert.equal((await answer).content[0]?.text, 'slept 1 s');
          // Long enough for the sweep to take the call for a dead instance's, were its result not here.
          t.clock.advance(STALE_CLAIM_MS + 31_000);
          // A sweep that marks the call waits for the chain's lock; one that leaves it alone ends at
          // once. 10 s is far more than a sweep takes.
          const bound = new Promise<'waited'>((resolve) => setTimeout(resolve, 10_000, 'waited').unref());
          const swept = await Promise.race([failStaleExecutions(t.service.ctx), bound]);
          assert.notEqual(swept, 'waited', 'the sweep tried to mark a call whose result is here');
          assert.equal((await storedHold(workspace))?.executionStatus, 'running');
        } finally {
          t.clock.advance(-(STALE_CLAIM_MS + 31_000));
          await unlock();
        }
        await t.service.ctx.executions.settled(id);
        const hold = await getHold(t.service.ctx, workspace.id, id);
        assert.equal(hold.execution?.status, 'executed');
      },
    );

    test('a call whose result was never recorded (its process died) is marked failed, outcome unknown', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG(slow.url) });
      const client = await connect(key);
      const name = label();
      const answer = slowCall(client, { label: name, seconds: 2 });
      await until('the call to reach the upstream', () => slow.call(name));
      const { id } = (await storedHold(workspace))!;
      // As if the instance that runs it had died: past its timeout (30 s) and the sweep's margin.
      // Moving the clock runs the execution worker at once, and its sweep marks the call.
      await t.clock.advance(STALE_CLAIM_MS + 31_000);
      try {
        const hold = await getHold(t.service.ctx, workspace.id, id);
        assert.equal(hold.status, 'auto_allowed');
        assert.equal(hold.execution?.status, 'failed');
        assert.equal((hold.execution?.outcome as { outcome?: string }).outcome, 'unknown');
        // The late answer still reaches its client, and changes nothing recorded.
        assert.equal((await answer).content[0]?.text, 'slept 2 s');
        await t.service.ctx.executions.settled(id);
        assert.equal((await getHold(t.service.ctx, workspace.id, id)).execution?.status, 'failed');
        assert.deepEqual(
          (await evidenceTypes(workspace)).filter((type) => type.startsWith('hold.')),
          ['hold.submitted', 'hold.failed'],
        );
      } finally {
        t.clock.advance(-(STALE_CLAIM_MS + 31_000));
      }
    });
  });
}
