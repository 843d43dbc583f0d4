/**
 * Storage that goes away or fills up under a running service: 503 `unavailable` for what needs it,
 * nothing half-written, and recovery without a restart, for requests and background work alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postgres, sqlite } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, startTestServiceOnCuttablePostgres } from './support/service.ts';
import { until } from './support/wait.ts';

const holdsOf = async (
  db: { one<T>(sql: string, params?: unknown[]): Promise<T | undefined> },
  workspaceId: string,
) =>
  Number(
    (await db.one<{ n: number }>('SELECT COUNT(*) AS n FROM holds WHERE workspace_id = $1', [workspaceId]))!
      .n,
  );

test(
  'PostgreSQL unreachable: 503 unavailable, nothing half-written, back by itself',
  { skip: postgres.skip },
  async () => {
    const { t, proxy, close } = await startTestServiceOnCuttablePostgres();
    try {
      const { workspace, key } = await t.workspace({
        config:
          'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n' +
          'tools:\n  - { connection: SDK, tool: send_invoice, classification: approval }\n',
      });
      const first = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'send_invoice' }),
      });
      assert.equal(first.status, 201);
      assert.equal(first.body.status, 'pending');

      await proxy.cut();
      const body = submission();
      const down = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(down.status, 503);
      assert.deepEqual(down.body, { error: 'unavailable' });
      assert.equal(down.headers.get('retry-after'), '5');
      const read = await call(t.url, 'GET', `/api/v1/holds/${first.body.id}`, { key });
      assert.equal(read.status, 503, 'reads too');
      assert.equal((await call(t.url, 'GET', '/api/v1/audit/verify', { key })).status, 503);
      const page = await fetch(`${t.url}/app/inbox`, { redirect: 'manual' });
      assert.ok([503, 303].includes(page.status), `the app: ${page.status}`);
      assert.equal((await call(t.url, 'GET', '/readyz')).status, 503);
      assert.equal((await call(t.url, 'GET', '/healthz')).status, 200);
      // The hold's deadline passes while storage is away; the deadline worker must not give up.
      // Past the default deadline, 240 minutes: every worker runs a round at once, and fails.
      await t.clock.advance(241 * 60_000);

      await proxy.restore();
      assert.equal((await call(t.url, 'GET', '/readyz')).status, 200);
      // The refused submit left nothing behind: its retry creates the hold now.
      const retried = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(retried.status, 201);
      // Background work is back by itself: the overdue hold is expired by the worker on its own
      // rounds (every 50 ms here), no restart, nobody moving the clock.
      await until('the deadline worker to recover and expire the hold', async () => {
        const row = await t.service.ctx.db.one<{ status: string }>('SELECT status FROM holds WHERE id = $1', [
          first.body.id,
        ]);
        return row!.status === 'expired' ? true : undefined;
      });
      assert.equal(await holdsOf(t.service.ctx.db, workspace.id), 2);
      const verify = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal(verify.body.valid, true);
    } finally {
      await close();
    }
  },
);

test(
  'SQLite on a full disk: 503 unavailable, no corruption, and writes again once there is room',
  { skip: sqlite.skip },
  async () => {
    const t = await startTestService(sqlite);
    try {
      const { workspace, key } = await t.workspace();
      const stored = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      assert.equal(stored.status, 201);
      const { db } = t.service.ctx;
      const pages = (await db.one<{ page_count: number }>('PRAGMA page_count'))!.page_count;
      await db.exec(`PRAGMA max_page_count = ${pages}`);
      try {
        const big = submission({ arguments: { blob: 'x'.repeat(256 * 1024) } });
        const refused = await call(t.url, 'POST', '/api/v1/holds', { key, body: big });
        assert.equal(refused.status, 503);
        assert.deepEqual(refused.body, { error: 'unavailable' });
        assert.equal(await holdsOf(db, workspace.id), 1, 'nothing half-written');
        // What is stored stays readable and intact.
        assert.equal((await call(t.url, 'GET', `/api/v1/holds/${stored.body.id}`, { key })).status, 200);
        assert.equal((await call(t.url, 'GET', '/api/v1/audit/verify', { key })).body.valid, true);
        assert.equal(
          (await db.one<{ integrity_check: string }>('PRAGMA integrity_check'))!.integrity_check,
          'ok',
        );

        await db.exec('PRAGMA max_page_count = 1073741823');
        const retried = await call(t.url, 'POST', '/api/v1/holds', { key, body: big });
        assert.equal(retried.status, 201, 'room again: the same request succeeds, no restart');
      } finally {
        await db.exec('PRAGMA max_page_count = 1073741823');
      }
      assert.equal((await call(t.url, 'GET', '/api/v1/audit/verify', { key })).body.valid, true);
    } finally {
      await t.close();
    }
  },
);
