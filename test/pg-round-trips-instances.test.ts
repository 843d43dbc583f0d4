/**
 * Two instances on one PostgreSQL, with a submission's round trips cut to three (issue 43,
 * test/pg-round-trips.test.ts): the notice to the other instances now goes with the submission's
 * COMMIT, and the API key is read, with the request counted, on every request as before, so a key
 * revoked on one instance is refused at the next request on the other.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { revokeApiKey } from '../src/services/api-keys.ts';
import { postgres, type Storage } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';
import { settles } from './support/wait.ts';

const CONFIG = `
members:
  - { email: admin@acme.test, name: Admin, role: admin }
tools:
  - { connection: SDK, tool: read_balance, classification: allow }
  - { connection: SDK, tool: send_invoice, classification: approval }
`;

describe('two instances on one PostgreSQL, three round trips a submission', { skip: postgres.skip }, () => {
  let storage: Storage;
  let a: TestService;
  let b: TestService;
  before(async () => {
    storage = await postgres.create();
    // One after the other: the first runs the migrations.
    a = await startTestService(postgres, { storage });
    b = await startTestService(postgres, { storage });
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await storage?.drop();
  });

  for (const [kind, tool, status] of [
    ['an auto-allowed', 'read_balance', 'allowed'],
    ['a pending', 'send_invoice', 'pending'],
  ] as const) {
    test(`${kind} submission on one instance is heard on the other (told with its commit)`, async () => {
      const { workspace, key } = await a.workspace({ config: CONFIG });
      let stop = () => {};
      const heard = new Promise<void>((resolve) => {
        stop = b.service.ctx.holdEvents.watch(workspace.id, (event) => event === 'changed' && resolve());
      });
      try {
        const hold = await call(a.url, 'POST', '/api/v1/holds', {
          key,
          body: submission({ tool_name: tool }),
        });
        assert.equal(hold.body.status, status);
        await settles('the other instance to hear of the new hold', heard);
      } finally {
        stop();
      }
    });
  }

  test('a key revoked on one instance is refused at the next request on the other', async () => {
    const { workspace, key } = await a.workspace({ config: CONFIG });
    const body = () => submission({ tool_name: 'read_balance' });
    assert.equal((await call(a.url, 'POST', '/api/v1/holds', { key, body: body() })).status, 201);
    const [stored] = await b.service.ctx.db.all<{ id: string }>(
      'SELECT id FROM api_keys WHERE workspace_id = $1',
      [workspace.id],
    );
    await revokeApiKey(b.service.ctx, stored!.id);
    assert.equal((await call(a.url, 'POST', '/api/v1/holds', { key, body: body() })).status, 401);
    assert.equal((await call(a.url, 'GET', '/api/v1/holds/svc_pa_none', { key })).status, 401);
  });
});
