/** Random identifiers and secrets. WebCrypto's global getRandomValues keeps this free of node:* imports. */

export function randomBytes(count: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(count));
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
