/** Unit tests of verifyWebhookSignature against signatures computed independently with node:crypto. */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { verifyWebhookSignature } from '../src/index.ts';

const SECRET = `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => 255 - i)).toString('base64')}`;

const body = JSON.stringify({
  event: 'hold.approved',
  created_at: '2026-03-01T10:05:00.000Z',
  id: 'svc_pa_Q2x8kLm3Np9rT5vW7yZ1aB',
  data: {
    status: 'approved',
    tool_name: 'send_invoice',
    summary: 'send_invoice (120 EUR) by billing-bot',
    agent: { id: 'billing-bot' },
    connection: 'SDK',
    decided_at: '2026-03-01T10:05:00.000Z',
    decision: { verdict: 'approve', reason: 'Looks right – ok ✓', channel: 'inbox' },
  },
});

/** The hex HMAC-SHA256 of the body, keyed with the secret string as shown (prefix included). */
const sign = (payload: string | Uint8Array, secret = SECRET) =>
  createHmac('sha256', secret).update(payload).digest('hex');

const signature = sign(body);
const oldSignature = sign(body, OLD_SECRET);

test('a valid signature of a string body', async () => {
  assert.equal(await verifyWebhookSignature(body, signature, SECRET), true);
});

test('a valid signature of a byte body: Uint8Array, Buffer, a Buffer inside a larger one, ArrayBuffer', async () => {
  const bytes = new TextEncoder().encode(body);
  // A view at an offset: reading its whole underlying buffer would add the padding.
  const inside = Buffer.from(`xx${body}yy`).subarray(2, -2);
  for (const raw of [bytes, Buffer.from(body), inside, bytes.slice().buffer]) {
    assert.equal(await verifyWebhookSignature(raw, signature, SECRET), true);
  }
});

test('uppercase hex is accepted', async () => {
  assert.equal(await verifyWebhookSignature(body, signature.toUpperCase(), SECRET), true);
});

test('the wrong secret fails, including the base64-decoded key of the right one', async () => {
  assert.equal(await verifyWebhookSignature(body, oldSignature, SECRET), false);
  const decodedKey = Buffer.from(SECRET.slice('whsec_'.length), 'base64');
  const signedWithDecodedKey = createHmac('sha256', decodedKey).update(body).digest('hex');
  assert.equal(await verifyWebhookSignature(body, signedWithDecodedKey, SECRET), false);
});

test('a body changed by one byte fails', async () => {
  const changed = body.replace('"approved"', '"approvee"');
  assert.notEqual(changed, body);
  assert.equal(await verifyWebhookSignature(changed, signature, SECRET), false);
  const bytes = Buffer.from(body);
  bytes.writeUInt8(bytes.readUInt8(0) ^ 1, 0);
  assert.equal(await verifyWebhookSignature(bytes, signature, SECRET), false);
});

test('a malformed or missing signature is false', async () => {
  const malformed = [
    signature.slice(0, 62),
    `${signature}00`,
    `sha256=${signature}`,
    `${signature.slice(0, 63)}g`,
    lenientTwin(signature),
    '',
    ' ',
    ',',
    null,
    undefined,
  ];
  for (const candidate of malformed) {
    assert.equal(await verifyWebhookSignature(body, candidate, SECRET), false, String(candidate));
  }
});

test('during a rotation one matching signature of two is enough, in either order', async () => {
  for (const header of [
    `${oldSignature},${signature}`,
    `${signature},${oldSignature}`,
    ` ${oldSignature} , ${signature} `,
  ]) {
    assert.equal(await verifyWebhookSignature(body, header, SECRET), true, header);
  }
  assert.equal(
    await verifyWebhookSignature(body, `${oldSignature},${sign(body, 'whsec_other')}`, SECRET),
    false,
  );
});

test('more than 4 signatures is false even when one matches', async () => {
  const others = ['a', 'b', 'c', 'd'].map((secret) => sign(body, `whsec_${secret}`));
  assert.equal(
    await verifyWebhookSignature(body, [...others.slice(0, 3), signature].join(','), SECRET),
    true,
  );
  assert.equal(await verifyWebhookSignature(body, [...others, signature].join(','), SECRET), false);
});

test('an empty secret throws a TypeError', async () => {
  await assert.rejects(verifyWebhookSignature(body, signature, ''), TypeError);
});

/**
 * The signature with one byte `0x` rewritten as `xg`: not hex, yet parseInt('xg', 16) is x, so a
 * decoder that skipped the hex check would read the same bytes and accept it.
 */
function lenientTwin(hex: string): string {
  for (let i = 0; i < hex.length; i += 2) {
    if (hex[i] === '0') return `${hex.slice(0, i)}${hex[i + 1]}g${hex.slice(i + 2)}`;
  }
  throw new Error('the signature has no byte below 0x10: change the test body');
}
