/**
 * Makes packages/python/tests/fixtures/signed_decisions.json: evidence entries of passkey-signed decisions, signed with Node's own
 * crypto (ES256, Ed25519, RS256), so that the Python SDK's verifier is checked against an
 * implementation other than its own. Run again only to change the cases:
 *   node test/support/make-signed-decisions-fixture.ts
 * test/signed-decision-fixture.test.ts checks that the TypeScript SDK reads every case the same way.
 */
import { createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { format } from 'prettier';
import { actionChallenge } from '../../packages/sdk/src/signed-decision.ts';

const RP_ID = 'approvals.example.com';
const ORIGIN = `https://${RP_ID}`;
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest();
const b64url = (data: Buffer) => data.toString('base64url');

const member = { id: 'mem_ann', email: 'ann@acme.test', name: 'Ann' };
const other = { id: 'mem_bob', email: 'bob@acme.test', name: 'Bob' };
let seq = 0;
const entry = (type: string, data: Record<string, unknown>) => ({ seq: ++seq, type, data });

const submitted = (hold: string, amount: number) =>
  entry('hold.submitted', {
    hold,
    connection: 'SDK',
    tool_name: 'transfer',
    agent: { id: 'billing-bot', label: null },
    arguments: { amount, currency: 'EUR', iban: 'DE02120300000000202051' },
    status: 'pending',
  });

function enrol(credentialId: string, who: typeof member, publicKey: KeyObject, algorithm: number) {
  return entry('passkey.enrolled', {
    member: { id: who.id, email: who.email },
    credential_id: credentialId,
    public_key: b64url(publicKey.export({ format: 'der', type: 'spki' })),
    algorithm,
    rp_id: RP_ID,
  });
}

async function assertion(
  challengeOf: { hold: string; amount: number; verdict: 'approve' | 'reject' },
  credentialId: string,
  privateKey: KeyObject,
  algorithm: number,
  options: { flags?: number; rpId?: string } = {},
) {
  const challenge = await actionChallenge({
    hold: challengeOf.hold,
    connection: 'SDK',
    tool_name: 'transfer',
    agent: 'billing-bot',
    arguments: { amount: challengeOf.amount, currency: 'EUR', iban: 'DE02120300000000202051' },
    verdict: challengeOf.verdict,
  });
  const clientData = Buffer.from(
    JSON.stringify({ type: 'webauthn.get', challenge, origin: ORIGIN, crossOrigin: false }),
  );
  const authenticatorData = Buffer.concat([
    sha256(options.rpId ?? RP_ID),
    Buffer.from([options.flags ?? 0x05]),
    Buffer.from([0, 0, 0, 7]),
  ]);
  const signed = Buffer.concat([authenticatorData, sha256(clientData)]);
  const signature = sign(algorithm === -8 ? null : 'sha256', signed, privateKey);
  return {
    credential_id: credentialId,
    authenticator_data: b64url(authenticatorData),
    client_data_json: b64url(clientData),
    signature: b64url(signature),
  };
}

const decided = (hold: string, verdict: string, who: typeof member, passkey: unknown) =>
  entry(verdict === 'reject' ? 'hold.rejected' : 'hold.approved', {
    hold,
    verdict,
    member: { id: who.id, email: who.email, name: who.name },
    channel: 'inbox',
    passkey,
  });

const es = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const bobKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });

const entries = [
  enrol('cred-es', member, es.publicKey, -7),
  enrol('cred-ed', member, ed.publicKey, -8),
  enrol('cred-rs', member, rsa.publicKey, -257),
  enrol('cred-bob', other, bobKey.publicKey, -7),
  submitted('svc_pa_1', 250000),
  submitted('svc_pa_2', 250000),
  submitted('svc_pa_3', 900),
  submitted('svc_pa_4', 250000),
  submitted('svc_pa_5', 250000),
  submitted('svc_pa_6', 250000),
  submitted('svc_pa_7', 250000),
];
const cases: { name: string; seq: number; valid: boolean; reason?: string }[] = [];
const add = async (name: string, decision: ReturnType<typeof entry>, reason?: string) => {
  entries.push(decision);
  cases.push({ name, seq: decision.seq, valid: reason === undefined, ...(reason ? { reason } : {}) });
};
await add(
  'ES256 approval',
  decided(
    'svc_pa_1',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_1', amount: 250000, verdict: 'approve' }, 'cred-es', es.privateKey, -7),
  ),
);
await add(
  'Ed25519 approval',
  decided(
    'svc_pa_2',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_2', amount: 250000, verdict: 'approve' }, 'cred-ed', ed.privateKey, -8),
  ),
);
await add(
  'RS256 rejection',
  decided(
    'svc_pa_4',
    'reject',
    member,
    await assertion({ hold: 'svc_pa_4', amount: 250000, verdict: 'reject' }, 'cred-rs', rsa.privateKey, -257),
  ),
);
// Signed for 900, the hold says 250,000: another action.
await add(
  'an amount changed',
  decided(
    'svc_pa_3',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_3', amount: 250000, verdict: 'approve' }, 'cred-es', es.privateKey, -7),
  ),
  'challenge_mismatch',
);
// The assertion of svc_pa_1 put on svc_pa_5.
await add(
  'an assertion replayed on another hold',
  decided(
    'svc_pa_5',
    'approve',
    member,
    (entries.find((e) => e.seq === cases[0]!.seq)!.data as { passkey: unknown }).passkey,
  ),
  'challenge_mismatch',
);
// A rejection's signature presented as an approval.
await add(
  'a verdict changed',
  decided(
    'svc_pa_6',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_6', amount: 250000, verdict: 'reject' }, 'cred-es', es.privateKey, -7),
  ),
  'challenge_mismatch',
);
await add(
  "another member's credential",
  decided(
    'svc_pa_7',
    'approve',
    member,
    await assertion(
      { hold: 'svc_pa_7', amount: 250000, verdict: 'approve' },
      'cred-bob',
      bobKey.privateKey,
      -7,
    ),
  ),
  'wrong_member',
);
await add(
  'user not verified',
  decided(
    'svc_pa_7',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_7', amount: 250000, verdict: 'approve' }, 'cred-es', es.privateKey, -7, {
      flags: 0x01,
    }),
  ),
  'user_not_verified',
);
await add(
  'another relying party',
  decided(
    'svc_pa_7',
    'approve',
    member,
    await assertion({ hold: 'svc_pa_7', amount: 250000, verdict: 'approve' }, 'cred-es', es.privateKey, -7, {
      rpId: 'evil.example',
    }),
  ),
  'wrong_relying_party',
);
const forged = await assertion(
  { hold: 'svc_pa_7', amount: 250000, verdict: 'approve' },
  'cred-es',
  bobKey.privateKey,
  -7,
);
await add('signed by another key', decided('svc_pa_7', 'approve', member, forged), 'bad_signature');

const file = new URL('../../packages/python/tests/fixtures/signed_decisions.json', import.meta.url);
const text = JSON.stringify({ made_by: 'test/support/make-signed-decisions-fixture.ts', entries, cases });
writeFileSync(file, await format(text, { parser: 'json' }));
