/**
 * The service's Ed25519 keys for chain heads (checkpoints) and hold receipts (receipts.ts). With
 * AUDIT_SIGNING_KEY the signing key comes from configuration, and only configured keys (it, plus the
 * earlier public keys listed in AUDIT_TRUSTED_KEYS) are trusted: a database writer can add a key to the
 * database, never to the configuration. Without it, a key is made once and stored in the database,
 * shared by every instance there, and every key the database holds is trusted: a database writer can
 * then forge checkpoints and receipts.
 */
import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import { type Checkpoint, checkpointInput } from '../../packages/sdk/src/chain.ts';
import type { Db, Sql } from '../store/db.ts';
import { findSigningKey, insertSigningKey, listSigningKeys } from '../store/evidence.ts';
import { sha256Hex } from './hashing.ts';

export interface AuditSigner {
  keyId: string;
  /** The private key `keyId` names; it signs receipts too (receipts.ts). */
  signingKey: KeyObject;
  /** Base64 Ed25519 signature of the UTF-8 text. */
  sign(text: string): string;
  /**
   * Whether a trusted key, the one the checkpoint names, signed this checkpoint of workspace `orgId`.
   * `sql`: the transaction the caller is in, if any (SQLite has one connection: another read would wait).
   */
  trusts(orgId: string, checkpoint: Checkpoint, sql?: Sql): Promise<boolean>;
  /** The trusted public keys, the current one last. */
  published(): Promise<PublishedKey[]>;
  /** Whether the keys come from configuration (a database writer cannot forge checkpoints). */
  configured: boolean;
}

export interface PublishedKey {
  key_id: string;
  algorithm: 'Ed25519';
  public_key_pem: string;
  jwk: Record<string, unknown>;
}

/**
 * A compact JWS (RFC 7515) of `payload` under the protected `header`, signed with the Ed25519 `key`
 * (`alg: EdDSA`): the receipts' form (receipts.ts). Signed here, in one synchronous call: jose signs
 * through WebCrypto, a trip through the thread pool that cost an allowed MCP call more than the
 * signature itself.
 */
export function signCompactJws(key: KeyObject, header: object, payload: object): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
}

const keyIdOf = (publicKey: KeyObject) =>
  sha256Hex(String(publicKey.export({ format: 'jwk' }).x)).slice(0, 16);
const pemOf = (publicKey: KeyObject) => publicKey.export({ format: 'pem', type: 'spki' }).toString();

function publish(publicKey: KeyObject): PublishedKey {
  const keyId = keyIdOf(publicKey);
  return {
    key_id: keyId,
    algorithm: 'Ed25519',
    public_key_pem: pemOf(publicKey),
    jwk: { ...publicKey.export({ format: 'jwk' }), alg: 'EdDSA', use: 'sig', kid: keyId },
  };
}

/**
 * Checks checkpoints' signatures, remembering the last one found valid for each workspace: its chain's
 * head is checked again every few seconds (chain-guard.ts) and is mostly unchanged, so only the same
 * key's same bytes (`keyText`: its PEM, or its configured id) under the same signature skip the check.
 */
function checkpointVerifier() {
  const lastValid = new Map<string, string>();
  return (keyText: string, publicKey: () => KeyObject, orgId: string, checkpoint: Checkpoint) => {
    const input = checkpointInput({ orgId, ...checkpoint });
    const seen = `${keyText}\n${input}\n${checkpoint.signature}`;
    if (lastValid.get(orgId) === seen) return true;
    let valid: boolean;
    try {
      valid = verify(null, Buffer.from(input), publicKey(), Buffer.from(checkpoint.signature, 'base64'));
    } catch {
      valid = false;
    }
    if (valid) lastValid.set(orgId, seen);
    return valid;
  };
}

/** The Ed25519 public keys in a text of PEM blocks (AUDIT_TRUSTED_KEYS); anything else is refused. */
export function parseTrustedKeys(text: string): KeyObject[] {
  const blocks = text.match(/-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g) ?? [];
  const rest = blocks.reduce((left, block) => left.replace(block, ''), text).replace(/[\s,]/g, '');
  if (rest !== '' || blocks.length === 0)
    throw new Error('AUDIT_TRUSTED_KEYS must hold PEM public keys ("-----BEGIN PUBLIC KEY-----" …) only');
  return blocks.map((block) => {
    const key = createPublicKey(block);
    if (key.asymmetricKeyType !== 'ed25519')
      throw new Error('AUDIT_TRUSTED_KEYS holds a key that is not Ed25519');
    return key;
  });
}

export async function loadAuditSigner(
  db: Db,
  settings: { signingKey?: string; trustedKeys?: string },
  now: number,
): Promise<AuditSigner> {
  if (settings.signingKey) {
    const signer = configuredSigner(settings.signingKey, settings.trustedKeys);
    // The public half only, so that checkpoints it signed still verify should the setting be removed.
    const [current] = (await signer.published()).slice(-1);
    await insertSigningKey(db, {
      id: signer.keyId,
      privateKey: null,
      publicKey: current!.public_key_pem,
      createdAt: now,
    });
    return signer;
  }
  if (settings.trustedKeys)
    throw new Error('AUDIT_TRUSTED_KEYS only counts with AUDIT_SIGNING_KEY: set both, or neither');
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
  const privateKey = createPrivateKey(stored);
  const keyId = keyIdOf(createPublicKey(privateKey));
  const signedBy = checkpointVerifier();
  return {
    keyId,
    signingKey: privateKey,
    configured: false,
    sign: (text) => sign(null, Buffer.from(text), privateKey).toString('base64'),
    async trusts(orgId, checkpoint, sql = db) {
      const key = await findSigningKey(sql, checkpoint.key_id);
      return (
        key !== undefined && signedBy(key.publicKey, () => createPublicKey(key.publicKey), orgId, checkpoint)
      );
    },
    async published() {
      const keys = (await listSigningKeys(db)).map((row) => publish(createPublicKey(row.publicKey)));
      return [...keys.filter((key) => key.key_id !== keyId), ...keys.filter((key) => key.key_id === keyId)];
    },
  };
}

function configuredSigner(signingKeyPem: string, trustedKeysText: string | undefined): AuditSigner {
  const privateKey = createPrivateKey(signingKeyPem);
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('AUDIT_SIGNING_KEY is not an Ed25519 key');
  const current = createPublicKey(privateKey);
  const keyId = keyIdOf(current);
  const trusted = new Map<string, KeyObject>();
  for (const key of trustedKeysText ? parseTrustedKeys(trustedKeysText) : []) trusted.set(keyIdOf(key), key);
  trusted.delete(keyId);
  trusted.set(keyId, current);
  const published = [...trusted.values()].map(publish);
  const signedBy = checkpointVerifier();
  return {
    keyId,
    signingKey: privateKey,
    configured: true,
    sign: (text) => sign(null, Buffer.from(text), privateKey).toString('base64'),
    trusts: async (orgId, checkpoint) => {
      const key = trusted.get(checkpoint.key_id);
      return key !== undefined && signedBy(checkpoint.key_id, () => key, orgId, checkpoint);
    },
    published: async () => published,
  };
}
