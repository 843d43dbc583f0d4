/** Checking that a webhook delivery comes from the service (decisions.md, Webhooks). */

import { subtle } from './web-crypto.ts';

const HEX_SIGNATURE = /^[0-9a-fA-F]{64}$/;
/** During a secret rotation the header carries two signatures; more than a few is not ours. */
const MAX_SIGNATURES = 4;

/**
 * Whether `signature` (the `X-Service-Signature` header) is the HMAC-SHA256 of the raw body keyed
 * with `secret` (the `whsec_…` string as shown). Pass the body exactly as received, before any JSON
 * parsing. During a rotation the header holds two comma-separated signatures; one match is enough.
 * The comparison is WebCrypto's HMAC verify, which runs in constant time.
 */
export async function verifyWebhookSignature(
  rawBody: string | Uint8Array | ArrayBuffer,
  signature: string | null | undefined,
  secret: string,
): Promise<boolean> {
  if (typeof secret !== 'string' || secret === '')
    throw new TypeError('verifyWebhookSignature: secret is required');
  if (typeof signature !== 'string') return false;
  const candidates = signature.split(',').map((part) => part.trim());
  if (candidates.length > MAX_SIGNATURES) return false;
  const encoder = new TextEncoder();
  const key = await subtle().importKey(
    'raw',
    encoder.encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['verify'],
  );
  const body = typeof rawBody === 'string' ? encoder.encode(rawBody) : new Uint8Array(rawBody);
  let valid = false;
  // Every candidate is checked, so the time taken does not tell which one matched.
  for (const candidate of candidates) {
    if (!HEX_SIGNATURE.test(candidate)) continue;
    if (await subtle().verify('HMAC', key, hexToBytes(candidate), body)) valid = true;
  }
  return valid;
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}
