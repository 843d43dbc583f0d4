/** Random identifiers and secrets. WebCrypto's global getRandomValues keeps this free of node:* imports. */

/** Random bytes are drawn this many at a time: each draw costs as much as a few thousand bytes. */
const POOL_SIZE = 4096;
let pool = new Uint8Array(0);
let used = 0;

/** Bytes from the system's CSPRNG, each handed out once. */
export function randomBytes(count: number): Uint8Array {
  if (count > POOL_SIZE) return crypto.getRandomValues(new Uint8Array(count));
  if (used + count > pool.length) {
    pool = crypto.getRandomValues(new Uint8Array(POOL_SIZE));
    used = 0;
  }
  const bytes = pool.slice(used, used + count);
  // What was handed out is not kept: a secret drawn here lives only where it was given.
  pool.fill(0, used, used + count);
  used += count;
  return bytes;
}

export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

/** `prefix` + base64url of `bytes` random bytes (16 bytes = 128 bits, unguessable). */
export function randomId(prefix: string, bytes = 16): string {
  return prefix + base64url(randomBytes(bytes));
}

export const HOLD_REFERENCE_PREFIX = 'svc_pa_';
export const HOLD_REFERENCE_PATTERN = /^svc_pa_[A-Za-z0-9_-]{22,64}$/;

export const newHoldReference = () => randomId(HOLD_REFERENCE_PREFIX);
export const newWorkspaceId = () => randomId('org_', 12);
export const newKeyId = () => randomId('key_', 12);
export const newMemberId = () => randomId('mem_', 12);
