/**
 * The service's Ed25519 key that signs chain heads (checkpoints). Taken from the setting
 * AUDIT_SIGNING_KEY when given (keeps the private key out of the database), else made once and
 * stored, shared by every instance on the same database. The public half of every key that ever
 * signed is kept, so checkpoints stay verifiable after the key changes.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { checkpointInput } from '../../packages/sdk/src/chain.ts';
import type { Db, Sql } from '../store/db.ts';
import { findSigningKey, insertSigningKey, listSigningKeys } from '../store/evidence.ts';
import { sha256Hex } from './hashing.ts';

export interface AuditSigner {
  keyId: string;
  /** Base64 Ed25519 signature of the UTF-8 text. */
  sign(text: string): string;
}

export interface PublishedKey {
  key_id: string;
  algorithm: 'Ed25519';
  public_key_pem: string;
  jwk: Record<string, unknown>;
}

const keyIdOf = (publicKey: KeyObject) =>
  sha256Hex(String(publicKey.export({ format: 'jwk' }).x)).slice(0, 16);
const pemOf = (publicKey: KeyObject) => publicKey.export({ format: 'pem', type: 'spki' }).toString();

function signerFrom(privateKey: KeyObject): AuditSigner {
  return {
    keyId: keyIdOf(createPublicKey(privateKey)),
    sign: (text) => sign(null, Buffer.from(text), privateKey).toString('base64'),
  };
}

export async function loadAuditSigner(
  db: Db,
  configuredPem: string | undefined,
  now: number,
): Promise<AuditSigner> {
  if (configuredPem) {
    const privateKey = createPrivateKey(configuredPem);
    const signer = signerFrom(privateKey);
    await insertSigningKey(db, {
      id: signer.keyId,
      privateKey: null,
      publicKey: pemOf(createPublicKey(privateKey)),
      createdAt: now,
    });
    return signer;
  }
  const stored = await db.transaction(async (tx) => {
    if (db.dialect === 'postgres') await tx.one('SELECT pg_advisory_xact_lock(7294002)');
    const own = (await listSigningKeys(tx)).filter((key) => key.privateKey !== null).at(-1);
    if (own) return own.privateKey!;
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await insertSigningKey(tx, {
      id: keyIdOf(publicKey),
      privateKey: pem,
      publicKey: pemOf(publicKey),
      createdAt: now,
    });
    return pem;
  });
  return signerFrom(createPrivateKey(stored));
}

/** Every key that ever signed, newest last, for the well-known endpoint. */
export async function publishedKeys(sql: Sql): Promise<PublishedKey[]> {
  return (await listSigningKeys(sql)).map((row) => {
    const publicKey = createPublicKey(row.publicKey);
    return {
      key_id: row.id,
      algorithm: 'Ed25519',
      public_key_pem: row.publicKey,
      jwk: { ...publicKey.export({ format: 'jwk' }), alg: 'EdDSA', use: 'sig', kid: row.id },
    };
  });
}

/** Whether a checkpoint was signed by one of our keys, the one it names. */
export async function checkpointSignedByUs(
  sql: Sql,
  checkpoint: {
    orgId: string;
    seq: number;
    hash: string;
    signed_at: string;
    key_id: string;
    signature: string;
  },
): Promise<boolean> {
  const key = await findSigningKey(sql, checkpoint.key_id);
  if (!key) return false;
  return verify(
    null,
    Buffer.from(checkpointInput(checkpoint)),
    createPublicKey(key.publicKey),
    Buffer.from(checkpoint.signature, 'base64'),
  );
}
