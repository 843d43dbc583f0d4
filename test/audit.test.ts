/** The evidence chain: what gets recorded, verification, tampering, and the signed checkpoint. */
import assert from 'node:assert/strict';
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { canonicalJson } from '../packages/sdk/src/canonical-json.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

for (const backend of backends) {
  describe(`evidence on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    const verifyChain = (key: string, query = '') =>
      call(t.url, 'GET', `/api/v1/audit/verify${query}`, { key });
    const entries = (workspaceId: string) =>
      t.service.ctx.db.all<{
        seq: number;
        type: string;
        data: string;
        hash: string;
        prev_hash: string;
        occurred_at: string;
      }>(
        'SELECT seq, type, data, hash, prev_hash, occurred_at FROM evidence WHERE workspace_id = $1 ORDER BY seq',
        [workspaceId],
      );

    test('every event is in the chain, in order, and anyone can recompute the hashes', async () => {
      const { workspace, key } = await t.workspace();
      const { body: held } = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      await decideAs(t, workspace.id, held.id, 'approve', 'admin@acme.test', 'ok');
      const rows = await entries(workspace.id);
      assert.deepEqual(
        rows.map((row) => row.type),
        [
          'workspace.created',
          'config.applied',
          'key.created',
          'tool.registered',
          'hold.submitted',
          'hold.approved',
        ],
      );
      const submitted = JSON.parse(rows[4]!.data);
      assert.equal(submitted.hold, held.id);
      assert.equal(submitted.rule, 'New tool: needs classification');
      assert.deepEqual(submitted.arguments, { amount: 120, currency: 'EUR' });
      assert.equal(JSON.parse(rows[5]!.data).member.email, 'admin@acme.test');
      let prev = '0'.repeat(64);
      for (const row of rows) {
        const input = {
          seq: row.seq,
          prev_hash: prev,
          orgId: workspace.id,
          type: row.type,
          occurred_at: row.occurred_at,
          data: JSON.parse(row.data),
        };
        const hash = createHash('sha256').update(canonicalJson(input)).digest('hex');
        assert.equal(row.prev_hash, prev);
        assert.equal(row.hash, hash);
        prev = hash;
      }
      const answer = await verifyChain(key);
      assert.equal(answer.status, 200);
      assert.equal(answer.body.valid, true);
      assert.equal(answer.body.checked, rows.length);
      assert.deepEqual(answer.body.head, { seq: rows.length, hash: prev });
      assert.equal(answer.body.first_invalid, null);
      assert.ok(Date.parse(answer.body.verified_at) > 0);
    });

    test('the checkpoint is signed with the published Ed25519 key', async () => {
      const { workspace, key } = await t.workspace();
      const { body } = await verifyChain(key);
      const published = await call(t.url, 'GET', '/.well-known/approvals-audit-key');
      assert.equal(published.status, 200);
      assert.equal(published.body.key_id, body.checkpoint.key_id);
      const publicKey = createPublicKey(published.body.public_key_pem);
      const { seq, hash, signed_at, key_id, signature } = body.checkpoint;
      assert.deepEqual({ seq, hash }, body.head);
      const signed = canonicalJson({ orgId: workspace.id, seq, hash, signed_at, key_id });
      assert.ok(verify(null, Buffer.from(signed), publicKey, Buffer.from(signature, 'base64')));
      const jwkKey = createPublicKey({ key: published.body.jwk, format: 'jwk' });
      assert.ok(verify(null, Buffer.from(signed), jwkKey, Buffer.from(signature, 'base64')));
    });

    test('tampering with one stored entry is reported at exactly that seq', async () => {
      const { workspace, key } = await t.workspace();
      for (let i = 0; i < 3; i++) await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      const rows = await entries(workspace.id);
      const target = rows[4]!;
      await t.service.ctx.db.run('UPDATE evidence SET data = $3 WHERE workspace_id = $1 AND seq = $2', [
        workspace.id,
        target.seq,
        target.data.replace('"amount":120', '"amount":99999'),
      ]);
      const { body } = await verifyChain(key);
      assert.equal(body.valid, false);
      assert.deepEqual(body.first_invalid, { seq: target.seq, reason: 'hash_mismatch' });
      assert.equal(body.checked, target.seq - 1);
      // A range that ends before the tampered entry is still valid.
      const earlier = await verifyChain(key, `?to_seq=${target.seq - 1}`);
      assert.equal(earlier.body.valid, true);
      assert.equal(earlier.body.checked, target.seq - 1);
    });

    test('stored data that means the same but is not the canonical text does not verify', async () => {
      const { workspace, key } = await t.workspace();
      await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      const rows = await entries(workspace.id);
      const target = rows[rows.length - 1]!;
      const reordered = JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(target.data)).reverse()));
      assert.notEqual(reordered, target.data);
      await t.service.ctx.db.run('UPDATE evidence SET data = $3 WHERE workspace_id = $1 AND seq = $2', [
        workspace.id,
        target.seq,
        reordered,
      ]);
      const { body } = await verifyChain(key);
      assert.deepEqual(body.first_invalid, { seq: target.seq, reason: 'hash_mismatch' });
    });

    test('deleting an entry, or the newest entries, is detected', async () => {
      const { workspace, key } = await t.workspace();
      for (let i = 0; i < 3; i++) await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      const rows = await entries(workspace.id);
      await t.service.ctx.db.run('DELETE FROM evidence WHERE workspace_id = $1 AND seq = $2', [
        workspace.id,
        3,
      ]);
      assert.deepEqual((await verifyChain(key)).body.first_invalid, { seq: 3, reason: 'sequence_gap' });

      const other = await t.workspace();
      await call(t.url, 'POST', '/api/v1/holds', { key: other.key, body: submission() });
      const last = (await entries(other.workspace.id)).length;
      await t.service.ctx.db.run('DELETE FROM evidence WHERE workspace_id = $1 AND seq >= $2', [
        other.workspace.id,
        last - 1,
      ]);
      const { body } = await verifyChain(other.key);
      assert.equal(body.valid, false);
      assert.deepEqual(body.first_invalid, { seq: last - 1, reason: 'truncated' });
      void rows;
    });

    test('moving from the key kept in the database to AUDIT_SIGNING_KEY, with the old key listed as trusted; a forged signature is caught', async () => {
      const storage = await backend.create();
      const first = await startTestService(backend, { storage });
      const { workspace, key } = await first.workspace();
      await call(first.url, 'POST', '/api/v1/holds', { key, body: submission() });
      const before = await call(first.url, 'GET', '/api/v1/audit/verify', { key });
      const oldKey = await call(first.url, 'GET', '/.well-known/approvals-audit-key');
      await first.stop();

      const pem = generateKeyPairSync('ed25519')
        .privateKey.export({ format: 'pem', type: 'pkcs8' })
        .toString();
      const second = await startTestService(backend, {
        storage,
        env: { AUDIT_SIGNING_KEY: pem, AUDIT_TRUSTED_KEYS: oldKey.body.public_key_pem },
      });
      try {
        const unchanged = await call(second.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal(unchanged.body.valid, true);
        assert.equal(unchanged.body.checkpoint.key_id, before.body.checkpoint.key_id);
        await call(second.url, 'POST', '/api/v1/holds', { key, body: submission() });
        const after = await call(second.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal(after.body.valid, true);
        assert.notEqual(after.body.checkpoint.key_id, before.body.checkpoint.key_id);
        const published = await call(second.url, 'GET', '/.well-known/approvals-audit-key');
        assert.equal(published.body.key_id, after.body.checkpoint.key_id);
        assert.deepEqual(
          published.body.keys.map((k: { key_id: string }) => k.key_id),
          [before.body.checkpoint.key_id, after.body.checkpoint.key_id],
        );
        await second.service.ctx.db.run('UPDATE evidence_heads SET signature = $2 WHERE workspace_id = $1', [
          workspace.id,
          Buffer.alloc(64).toString('base64'),
        ]);
        const forged = await call(second.url, 'GET', '/api/v1/audit/verify', { key });
        assert.equal(forged.body.valid, false);
        assert.deepEqual(forged.body.first_invalid, {
          seq: after.body.head.seq,
          reason: 'checkpoint_invalid',
        });
      } finally {
        await second.close();
      }
    });

    test('ranges: from_seq and to_seq; bad parameters are a 422', async () => {
      const { key } = await t.workspace();
      for (let i = 0; i < 3; i++) await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      const middle = await verifyChain(key, '?from_seq=2&to_seq=4');
      assert.equal(middle.body.valid, true);
      assert.equal(middle.body.checked, 3);
      assert.equal(middle.body.head.seq, 4);
      for (const query of [
        '?from_seq=0',
        '?from_seq=abc',
        '?to_seq=-1',
        '?from_seq=5&to_seq=2',
        '?from_seq=1.5',
      ]) {
        const answer = await verifyChain(key, query);
        assert.equal(answer.status, 422, query);
        assert.equal(answer.body.error, 'validation_failed');
      }
    });

    test('each workspace has a chain of its own, and sees only its own', async () => {
      const a = await t.workspace();
      const b = await t.workspace();
      await call(t.url, 'POST', '/api/v1/holds', { key: a.key, body: submission() });
      const checkedA = (await verifyChain(a.key)).body.checked;
      const checkedB = (await verifyChain(b.key)).body.checked;
      assert.equal(checkedA, checkedB + 2);
    });
  });
}
