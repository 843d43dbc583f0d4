/**
 * Unit tests of verifyReceipt against receipts signed independently with node:crypto (a compact JWS,
 * EdDSA, as RFC 7515 and 8037 spell it). The service's own receipts are tested in test/receipts.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { test } from 'node:test';
import { canonicalJson, type ReceiptKeys, verifyReceipt } from '../src/index.ts';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const jwk = (key: KeyObject, kid: string) =>
  ({ ...key.export({ format: 'jwk' }), kid }) as ReceiptKeys['keys'][0];
const JWKS: ReceiptKeys = { keys: [jwk(publicKey, 'k1')] };

const ACTION = { tool_name: 'send_invoice', arguments: { amount: 120, currency: 'EUR' } };
const NOW = Date.parse('2026-03-01T10:05:00.000Z');
const actionHash = (action: { connection?: string; tool_name: string; arguments: unknown }) =>
  createHash('sha256')
    .update(canonicalJson({ connection: action.connection ?? 'SDK', ...action }))
    .digest('hex');

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function signed(
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
  key: KeyObject = privateKey,
) {
  const input = `${b64({ alg: 'EdDSA', kid: 'k1', typ: 'approvals-receipt+jwt', ...header })}.${b64({
    iss: 'https://approvals.example.com',
    sub: 'svc_pa_Q2x8kLm3Np9rT5vW7yZ1aB',
    workspace: 'acme',
    environment: 'live',
    connection: 'SDK',
    tool_name: ACTION.tool_name,
    action_sha256: actionHash(ACTION),
    decision: 'approved',
    approvers: ['alice@acme.test'],
    iat: NOW / 1000,
    exp: NOW / 1000 + 900,
    ...claims,
  })}`;
  return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
}

const check = (receipt: string, action: object = ACTION, options: object = {}) =>
  verifyReceipt(receipt, action as typeof ACTION, { jwks: JWKS, workspace: 'acme', now: NOW, ...options });

test('a receipt of this action, workspace and key passes, with its claims', async () => {
  const result = await check(signed());
  assert.ok(result.valid);
  assert.equal(result.claims.decision, 'approved');
  assert.deepEqual(result.claims.approvers, ['alice@acme.test']);
  // The arguments in any key order are the same action.
  assert.ok(
    (await check(signed(), { arguments: { currency: 'EUR', amount: 120 }, tool_name: 'send_invoice' })).valid,
  );
});

test('another action, workspace or environment, or an expired receipt, does not pass', async () => {
  assert.deepEqual(await check(signed(), { ...ACTION, arguments: { amount: 121, currency: 'EUR' } }), {
    valid: false,
    reason: 'action_mismatch',
  });
  assert.equal((await check(signed(), { ...ACTION, connection: 'Payments' })).valid, false);
  assert.deepEqual(await check(signed(), ACTION, { workspace: 'other' }), {
    valid: false,
    reason: 'wrong_workspace',
  });
  assert.deepEqual(await check(signed(), ACTION, { environment: 'test' }), {
    valid: false,
    reason: 'wrong_environment',
  });
  assert.deepEqual(await check(signed(), ACTION, { now: NOW + 900_000 }), {
    valid: false,
    reason: 'expired',
  });
});

test('a changed payload, another key, another algorithm or garbage does not pass', async () => {
  const [header, , signature] = signed().split('.');
  const changed = `${header}.${b64({ workspace: 'acme', exp: NOW / 1000 + 900 })}.${signature}`;
  assert.deepEqual(await check(changed), { valid: false, reason: 'bad_signature' });
  const stranger = generateKeyPairSync('ed25519').privateKey;
  assert.deepEqual(await check(signed({}, {}, stranger)), { valid: false, reason: 'bad_signature' });
  assert.deepEqual(await check(signed({}, { kid: 'k2' }, stranger)), { valid: false, reason: 'unknown_key' });
  assert.deepEqual(await check(signed({}, { alg: 'none' })), {
    valid: false,
    reason: 'unsupported_algorithm',
  });
  assert.deepEqual(await check(signed({}, { alg: 'HS256' })), {
    valid: false,
    reason: 'unsupported_algorithm',
  });
  assert.deepEqual(await check(signed({}, { crit: ['exp'] })), { valid: false, reason: 'malformed' });
  for (const garbage of ['', 'a.b', 'a.b.c', '...', `${signed()}.x`])
    assert.equal((await check(garbage)).valid, false, garbage);
});
