/**
 * The service's Ed25519 key that signs chain heads (checkpoints). Taken from the setting
 * AUDIT_SIGNING_KEY when given (keeps the key out of the database), else made once and stored,
 * shared by every instance on the same database.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import type { Db } from '../store/db.ts';
import { insertSigningKey, listSigningKeys } from '../store/evidence.ts';
import { sha256Hex } from './hashing.ts';

export interface AuditSigner {
  keyId: string;
  /** Base64 Ed25519 signature of the UTF-8 text. */
  sign(text: string): string;
  verify(text: string, signature: string): boolean;
  publicKeyPem: string;
  publicKeyJwk: Record<string, unknown>;
}

function signerFrom(privateKey: KeyObject): AuditSigner {
  const publicKey = createPublicKey(privateKey);
  const jwk = publicKey.export({ format: 'jwk' });
  return {
    keyId: sha256Hex(String(jwk.x)).slice(0, 16),
    sign: (text) => sign(null, Buffer.from(text), privateKey).toString('base64'),
    verify: (text, signature) => verify(null, Buffer.from(text), publicKey, Buffer.from(signature, 'base64')),
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    publicKeyJwk: { ...jwk, alg: 'EdDSA', use: 'sig' },
  };
}

export async function loadAuditSigner(
  db: Db,
  configuredPem: string | undefined,
  now: number,
): Promise<AuditSigner> {
  if (configuredPem) return signerFrom(createPrivateKey(configuredPem));
  const stored = await db.transaction(async (tx) => {
    if (db.dialect === 'postgres') await tx.one('SELECT pg_advisory_xact_lock(7294002)');
    const [existing] = await listSigningKeys(tx);
    if (existing) return existing;
    const pair = generateKeyPairSync('ed25519');
    const signer = signerFrom(pair.privateKey);
    const row = {
      id: signer.keyId,
      privateKey: pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      publicKey: signer.publicKeyPem,
      createdAt: now,
    };
    await insertSigningKey(tx, row);
    return row;
  });
  return signerFrom(createPrivateKey(stored.privateKey));
}
