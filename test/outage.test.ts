/** Storage that goes away under a running service: 503 `unavailable`, and recovery without a restart. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { postgres } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestServiceOnCuttablePostgres } from './support/service.ts';

test(
  'PostgreSQL unreachable: 503 unavailable, nothing half-written, back by itself',
  {
    skip: postgres.skip,
  },
  async () => {
    const { t, proxy, close } = await startTestServiceOnCuttablePostgres();
    try {
      const { key } = await t.workspace();
      assert.equal((await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() })).status, 201);

      await proxy.cut();
      const body = submission();
      const down = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(down.status, 503);
      assert.deepEqual(down.body, { error: 'unavailable' });
      assert.equal((await call(t.url, 'GET', '/readyz')).status, 503);
      assert.equal((await call(t.url, 'GET', '/healthz')).status, 200);

      await proxy.restore();
      assert.equal((await call(t.url, 'GET', '/readyz')).status, 200);
      // The refused submit left nothing behind: its retry creates the hold now.
      const retried = await call(t.url, 'POST', '/api/v1/holds', { key, body });
      assert.equal(retried.status, 201);
      const verify = await call(t.url, 'GET', '/api/v1/audit/verify', { key });
      assert.equal(verify.body.valid, true);
    } finally {
      await close();
    }
  },
);
