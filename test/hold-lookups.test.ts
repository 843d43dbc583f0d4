/**
 * The lookups every MCP tool call makes stay bounded as a workspace's history grows. An agent that
 * polls the same allowed tool with the same arguments (a status check, every few seconds) leaves one
 * allowed hold per call under one call key; finding the *open* operation of that key (the dedup check,
 * before and under the chain lock) must not walk those. On main it did: the index held every hold of
 * the key, newest first, and each call stepped over all the allowed ones before it (about 0.1 ms per
 * call after 5,000 calls on SQLite, growing without end).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { submitHold } from '../src/services/submit-hold.ts';
import type { Sql } from '../src/store/db.ts';
import { openProxyHoldWhere } from '../src/store/holds.ts';
import { findMcpServerBySlug } from '../src/store/mcp-servers.ts';
import { backends } from './support/backends.ts';
import { startTestService, type TestService } from './support/service.ts';

/** Allowed calls already in the history under the one call key. */
const HISTORY = 3_000;

const CONFIG = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
mcp_servers:
  - { slug: status, name: Status, url: "http://127.0.0.1:9/mcp" }
tools:
  - { connection: Status, tool: poll, classification: allow }
`;

/** The dedup lookup as the proxy makes it (`findOpenProxyHold`), with the same predicate. */
const OPEN_CALL = `SELECT id FROM holds WHERE workspace_id = $1 AND ${openProxyHoldWhere('$2')} ORDER BY created_at DESC LIMIT 1`;

/** Copies the one hold HISTORY times, each a second later, as the history of a polling agent. */
async function growHistory(sql: Sql, dialect: 'sqlite' | 'postgres', holdId: string) {
  const columns = (
    dialect === 'sqlite'
      ? await sql.all<{ name: string }>("SELECT name FROM pragma_table_info('holds')")
      : await sql.all<{ name: string }>(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'holds' AND table_schema = current_schema()",
        )
  ).map((row) => row.name);
  const copy = columns.map((column) =>
    column === 'id' || column === 'idempotency_key'
      ? `${column} || '-' || n.i`
      : column === 'created_at'
        ? 'created_at + n.i * 1000'
        : column,
  );
  await sql.run(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HISTORY})
     INSERT INTO holds (${columns.join(', ')}) SELECT ${copy.join(', ')} FROM holds, n WHERE holds.id = $1`,
    [holdId],
  );
  await sql.exec(dialect === 'sqlite' ? 'ANALYZE' : 'ANALYZE holds');
}

for (const backend of backends) {
  describe(`hold lookups per call (${backend.name})`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(() => t?.close());

    test(`finding an open call does not walk ${HISTORY} allowed calls of the same key`, async () => {
      const { ctx } = t.service;
      const { workspace } = await t.workspace({ config: CONFIG });
      const server = (await findMcpServerBySlug(ctx.db, workspace.id, 'status'))!;
      const { hold } = await submitHold(
        ctx,
        {
          workspace,
          environment: 'live',
          requester: { kind: 'key' as const, keyId: 'key_direct', agentId: null, owner: null },
        },
        {
          connection: 'Status',
          toolName: 'poll',
          arguments: {},
          agent: { id: 'poller', label: null },
          context: {},
          idempotencyKey: 'poll',
          proxy: { mcpServerId: server.id, callKey: 'same-call' },
        },
      );
      assert.equal(hold.status, 'auto_allowed');
      await growHistory(ctx.db, ctx.db.dialect, hold.id);
      const params = [workspace.id, 'same-call'];
      assert.equal(await ctx.db.one(OPEN_CALL, params), undefined, 'no open call: every one was allowed');

      if (ctx.db.dialect === 'sqlite') {
        // SQLite tells which index a search uses, not how many entries it stepped over.
        const plan = await ctx.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${OPEN_CALL}`, params);
        const details = plan.map((row) => row.detail).join('; ');
        assert.match(details, /USING INDEX holds_open_calls\b/, details);
      } else {
        const [row] = await ctx.db.all<{ 'QUERY PLAN': unknown }>(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${OPEN_CALL}`,
          params,
        );
        const plan = JSON.stringify(row!['QUERY PLAN']);
        const removed = [...plan.matchAll(/"Rows Removed by Filter":\s*(\d+)/g)].reduce(
          (sum, match) => sum + Number(match[1]),
          0,
        );
        const scanned = [...plan.matchAll(/"Actual Rows":\s*(\d+)/g)].reduce(
          (sum, match) => sum + Number(match[1]),
          0,
        );
        assert.ok(removed + scanned <= 1, `rows stepped over: ${removed + scanned}; plan ${plan}`);
      }
    });
  });
}
