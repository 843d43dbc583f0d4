/**
 * The server hashes an entry's stored `data` text as it is, without parsing and serializing it again
 * (verify-chain.ts): a text that means the same as the canonical one but is not it must fail all the
 * same, and a database writer who hashes such a text again is still caught, by the signed head on the
 * server and by the canonical form in the SDK's offline check.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { verifyEvidenceExport } from '../packages/sdk/src/evidence.ts';
import { hashInputsOf } from '../packages/sdk/src/chain.ts';
import { exportEvidence } from '../src/services/export-evidence.ts';
import { sha256Hex } from '../src/services/hashing.ts';
import { verifyChain } from '../src/services/verify-chain.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

/** Arguments whose canonical text has escapes, non-ASCII and a number to write otherwise. */
const ARGUMENTS = { amount: 120, currency: 'EUR', note: 'café ☕ 😀 \u2028 \u001f', path: 'a/b' };

/** Texts of the same JSON value as the canonical `text` (but the last: the same look, other code points). */
const variants: Record<string, (text: string) => string> = {
  'pretty-printed': (text) => JSON.stringify(JSON.parse(text), null, 2),
  'a space after a colon': (text) => text.replace('":', '": '),
  'a trailing space': (text) => `${text} `,
  'a leading newline': (text) => `\n${text}`,
  'its keys in reverse order': (text) =>
    JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(text)).reverse())),
  'a key twice (JSON.parse keeps the last)': (text) =>
    `{${JSON.stringify(Object.keys(JSON.parse(text))[0])}:"forged",${text.slice(1)}`,
  'a number with a decimal point': (text) => text.replace('"amount":120', '"amount":120.0'),
  'a number with an exponent': (text) => text.replace('"amount":120', '"amount":1.2e2'),
  'a letter escaped': (text) => text.replace('café', 'caf\\u00e9'),
  'an emoji as escaped surrogates': (text) => text.replace('😀', '\\ud83d\\ude00'),
  'U+2028 escaped': (text) => text.replace('\u2028', '\\u2028'),
  'a control escape in capitals': (text) => text.replace('\\u001f', '\\u001F'),
  'a slash escaped': (text) => text.replace('a/b', 'a\\/b'),
  'é decomposed (NFD)': (text) => text.replace('café', 'café'.normalize('NFD')),
};

for (const backend of backends) {
  describe(`non-canonical stored data on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());

    /** A workspace with a hold; its submission is the newest entry. */
    async function newestEntry() {
      const { workspace, key } = await t.workspace();
      const held = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ arguments: ARGUMENTS }),
      });
      assert.equal(held.status, 201);
      const row = await t.service.ctx.db.one<{
        seq: number;
        prev_hash: string;
        type: string;
        occurred_at: string;
        data: string;
      }>(
        'SELECT seq, prev_hash, type, occurred_at, data FROM evidence WHERE workspace_id = $1 ORDER BY seq DESC LIMIT 1',
        [workspace.id],
      );
      assert.equal(row!.type, 'hold.submitted');
      return { workspaceId: workspace.id, entry: { ...row!, seq: Number(row!.seq) } };
    }

    const store = (workspaceId: string, seq: number, data: string, hash?: string) =>
      hash === undefined
        ? t.service.ctx.db.run('UPDATE evidence SET data = $3 WHERE workspace_id = $1 AND seq = $2', [
            workspaceId,
            seq,
            data,
          ])
        : t.service.ctx.db.run(
            'UPDATE evidence SET data = $3, hash = $4 WHERE workspace_id = $1 AND seq = $2',
            [workspaceId, seq, data, hash],
          );

    const exported = async (workspaceId: string) => {
      let text = '';
      for await (const part of exportEvidence(t.service.ctx, workspaceId)) text += part;
      return text;
    };

    test('the stored text, changed in any way that keeps its meaning, fails with hash_mismatch at its entry', async () => {
      for (const [name, change] of Object.entries(variants)) {
        const { workspaceId, entry } = await newestEntry();
        const changed = change(entry.data);
        assert.notEqual(changed, entry.data, name);
        if (!name.includes('NFD')) assert.deepEqual(JSON.parse(changed), JSON.parse(entry.data), name);
        assert.equal((await verifyChain(t.service.ctx, workspaceId, { toSeq: entry.seq })).valid, true);
        await store(workspaceId, entry.seq, changed);
        const whole = await verifyChain(t.service.ctx, workspaceId);
        assert.deepEqual(whole.first_invalid, { seq: entry.seq, reason: 'hash_mismatch' }, name);
        const range = await verifyChain(t.service.ctx, workspaceId, { fromSeq: entry.seq });
        assert.deepEqual(range.first_invalid, { seq: entry.seq, reason: 'hash_mismatch' }, name);
      }
    });

    test('a non-canonical text hashed again by a database writer: the signed head no longer matches, and the SDK finds the hash wrong', async () => {
      const { workspaceId, entry } = await newestEntry();
      const changed = variants['its keys in reverse order']!(entry.data);
      // The forger's hash covers their text exactly as the server hashes a stored text.
      const forged = sha256Hex(
        hashInputsOf(workspaceId)(entry.seq, entry.prev_hash, entry.type, entry.occurred_at, changed),
      );
      await store(workspaceId, entry.seq, changed, forged);
      await t.service.ctx.db.run('UPDATE evidence_heads SET hash = $2 WHERE workspace_id = $1', [
        workspaceId,
        forged,
      ]);
      const server = await verifyChain(t.service.ctx, workspaceId);
      assert.equal(server.valid, false);
      assert.deepEqual(server.first_invalid, { seq: entry.seq, reason: 'checkpoint_invalid' });
      const offline = await verifyEvidenceExport(await exported(workspaceId));
      assert.deepEqual(offline.first_invalid, { seq: entry.seq, reason: 'hash_mismatch' });
    });
  });
}
