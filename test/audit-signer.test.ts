/**
 * The signer remembers the last checkpoint it found valid for each workspace (a chain's head is
 * checked again every few seconds): only the very same bytes, key and signature are taken on memory.
 * Tried the way a database writer would: a remembered signature under changed fields, another
 * workspace, a key changed in the database.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, test } from 'node:test';
import { type Checkpoint, checkpointInput } from '../packages/sdk/src/chain.ts';
import { backends } from './support/backends.ts';
import { startTestService } from './support/service.ts';

const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

for (const backend of backends) {
  for (const configured of [true, false]) {
    describe(
      `checkpoint trust on ${backend.name}, ${configured ? 'AUDIT_SIGNING_KEY' : 'key kept in the database'}`,
      { skip: backend.skip },
      () => {
        test('a remembered valid checkpoint vouches for nothing else', async () => {
          const t = await startTestService(backend, { env: configured ? { AUDIT_SIGNING_KEY: pem } : {} });
          try {
            const { signer } = t.service.ctx;
            const { workspace } = await t.workspace();
            const head = {
              seq: 7,
              hash: 'a'.repeat(64),
              signed_at: new Date(0).toISOString(),
              key_id: signer.keyId,
            };
            const checkpoint: Checkpoint = {
              ...head,
              signature: signer.sign(checkpointInput({ orgId: workspace.id, ...head })),
            };
            assert.equal(await signer.trusts(workspace.id, checkpoint), true);
            assert.equal(await signer.trusts(workspace.id, checkpoint), true, 'again, from memory');
            for (const changed of [
              { ...checkpoint, hash: 'b'.repeat(64) },
              { ...checkpoint, seq: 8 },
              { ...checkpoint, signed_at: new Date(1).toISOString() },
              { ...checkpoint, key_id: 'f'.repeat(16) },
              { ...checkpoint, signature: Buffer.alloc(64).toString('base64') },
            ])
              assert.equal(await signer.trusts(workspace.id, changed), false, JSON.stringify(changed));
            assert.equal(await signer.trusts('another-workspace', checkpoint), false);
            assert.equal(await signer.trusts(workspace.id, checkpoint), true);
            if (!configured) {
              // A database writer swaps the stored public key: the remembered check does not stand for it.
              const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' });
              await t.service.ctx.db.run('UPDATE signing_keys SET public_key = $2 WHERE id = $1', [
                signer.keyId,
                other.toString(),
              ]);
              assert.equal(await signer.trusts(workspace.id, checkpoint), false);
            }
          } finally {
            await t.close();
          }
        });
      },
    );
  }
}
