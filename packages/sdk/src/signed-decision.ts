/**
 * Passkey-signed decisions. Where a rule (`signed: true`) or the workspace requires it, an approval
 * carries a WebAuthn assertion whose challenge is the SHA-256 of the canonical action: the hold, its
 * tool, connection, agent and arguments, and the verdict. The decision's evidence entry keeps the
 * assertion and a `passkey.enrolled` entry keeps the member's public key, so anyone holding the
 * evidence can check, offline and with nothing but WebCrypto, that this member's authenticator
 * approved exactly this action: any other amount or payee gives another challenge.
 */
import type { EvidenceEntry } from './chain.ts';
import { canonicalJson } from './canonical-json.ts';
import { subtle } from './web-crypto.ts';

/** What a signed decision commits to: the fields of the hold's `hold.submitted` entry, and the verdict. */
export interface SignedAction {
  hold: string;
  connection: string;
  tool_name: string;
  /** The agent identity's id. */
  agent: string;
  arguments: unknown;
  verdict: 'approve' | 'reject';
}

/** The WebAuthn assertion in a decision entry's `passkey`, every part base64url as the browser gave it. */
export interface PasskeyAssertion {
  credential_id: string;
  authenticator_data: string;
  client_data_json: string;
  signature: string;
}

/** Why a signed decision does not check out; `not_signed`: the entry carries no assertion. */
export type SignedDecisionProblem =
  | 'not_signed'
  | 'malformed'
  | 'wrong_hold'
  | 'wrong_member'
  | 'wrong_credential'
  | 'challenge_mismatch'
  | 'wrong_type'
  | 'wrong_origin'
  | 'wrong_relying_party'
  | 'user_not_verified'
  | 'unsupported_algorithm'
  | 'bad_signature';

export type SignedDecisionCheck =
  | { valid: true; member: { id: string; email: string }; credential_id: string }
  | { valid: false; reason: SignedDecisionProblem };

/** The fields of the entries these checks read (docs/evidence.md); the rest is left alone. */
interface SubmittedData {
  hold: string;
  connection: string;
  tool_name: string;
  agent?: { id?: string };
  arguments: unknown;
}
interface DecisionData {
  hold: string;
  verdict: string;
  /** An approval with changes: the call as changed, which its signature and later ones cover. */
  changed_arguments?: unknown;
  member?: { id?: string; email?: string };
  passkey?: PasskeyAssertion;
}
interface EnrolmentData {
  member?: { id?: string };
  credential_id: string;
  public_key: string;
  algorithm: number;
  rp_id: string;
}
const dataOf = <T>(entry: EvidenceEntry) => (entry.data ?? {}) as unknown as T;

/** The entries that may carry an approver's changes: approvals (docs/evidence.md). */
const APPROVALS = new Set(['hold.approval_recorded', 'hold.approved']);
/** An approval's changed call, if it made one. */
const changesOf = (entry: EvidenceEntry): unknown =>
  APPROVALS.has(entry.type) ? (dataOf<DecisionData>(entry).changed_arguments ?? undefined) : undefined;

/** The text the challenge hashes: the action's canonical JSON (RFC 8785). */
export function signedActionInput(action: SignedAction): string {
  return canonicalJson({
    hold: action.hold,
    connection: action.connection,
    tool_name: action.tool_name,
    agent: action.agent,
    arguments: action.arguments,
    verdict: action.verdict,
  });
}

/** The WebAuthn challenge of an action: base64url of the SHA-256 of its canonical JSON. */
export async function actionChallenge(action: SignedAction): Promise<string> {
  const digest = await subtle().digest('SHA-256', new TextEncoder().encode(signedActionInput(action)));
  return toBase64url(new Uint8Array(digest));
}

/**
 * Checks a signed decision entry (`hold.approved`, `hold.approval_recorded` or `hold.rejected` with
 * `passkey`) against the hold's `hold.submitted` entry and the member's `passkey.enrolled` entry, all
 * three from the same verified export: the credential is the member's, the challenge is the hash of
 * this action and verdict, the relying party and origin are the service's, the authenticator verified
 * its user, and the signature is good under the enrolled public key. The action is the call as it would
 * run: where an approver changed it (Approve with changes), the decision's own `changed_arguments`, or
 * those of `changed`, the hold's last decision with changes before this one.
 */
export async function verifySignedDecision(entries: {
  decision: EvidenceEntry;
  submitted: EvidenceEntry;
  enrolment: EvidenceEntry;
  changed?: EvidenceEntry;
}): Promise<SignedDecisionCheck> {
  const decision = dataOf<DecisionData>(entries.decision);
  const submitted = dataOf<SubmittedData>(entries.submitted);
  if (!decision.passkey) return { valid: false, reason: 'not_signed' };
  if (entries.submitted.type !== 'hold.submitted' || entries.enrolment.type !== 'passkey.enrolled')
    return { valid: false, reason: 'malformed' };
  const earlier = entries.changed;
  // `changed` is an earlier approval of the same hold that changed the call, or it is not one.
  if (earlier && (changesOf(earlier) === undefined || earlier.seq >= entries.decision.seq))
    return { valid: false, reason: 'malformed' };
  if (submitted.hold !== decision.hold || (earlier && dataOf<DecisionData>(earlier).hold !== decision.hold))
    return { valid: false, reason: 'wrong_hold' };
  const args = changesOf(entries.decision) ?? (earlier && changesOf(earlier)) ?? submitted.arguments;
  const expected = await actionChallenge(actionOf({ ...submitted, arguments: args }, decision.verdict));
  return checkAssertion(decision, expected, dataOf<EnrolmentData>(entries.enrolment));
}

/** What every signed decision of an export came to: how many were checked, and each that failed. */
export interface SignedDecisionsReport {
  checked: number;
  invalid: {
    seq: number;
    hold: string;
    reason: SignedDecisionProblem | 'hold_missing' | 'enrolment_missing';
  }[];
}

/**
 * Checks every signed decision in a chain's entries, oldest first (an export whose chain
 * `verifyEvidenceExport` found intact). Keeps two hashes and the call's names per hold and the enrolled
 * keys, not the holds' arguments, so a long export stays small in memory. A decision with changes, and
 * every later decision of its hold, is checked against the call as changed.
 */
export async function verifySignedDecisions(
  entries: Iterable<EvidenceEntry> | AsyncIterable<EvidenceEntry>,
): Promise<SignedDecisionsReport> {
  const challenges = new Map<string, { call: SubmittedData; approve: string; reject: string }>();
  const enrolments = new Map<string, EnrolmentData>();
  const report: SignedDecisionsReport = { checked: 0, invalid: [] };
  const remember = async (call: SubmittedData) =>
    challenges.set(call.hold, {
      call: { ...call, arguments: undefined },
      approve: await actionChallenge(actionOf(call, 'approve')),
      reject: await actionChallenge(actionOf(call, 'reject')),
    });
  for await (const entry of entries) {
    if (entry.type === 'hold.submitted') {
      await remember(dataOf<SubmittedData>(entry));
      continue;
    }
    if (entry.type === 'passkey.enrolled') {
      const data = dataOf<EnrolmentData>(entry);
      enrolments.set(data.credential_id, data);
      continue;
    }
    const data = dataOf<DecisionData>(entry);
    const known = challenges.get(data.hold);
    const changes = changesOf(entry);
    if (known && changes !== undefined) await remember({ ...known.call, arguments: changes });
    if (data.passkey && entry.type.startsWith('hold.')) {
      report.checked += 1;
      const expected = challenges.get(data.hold);
      const enrolment = enrolments.get(data.passkey.credential_id);
      const verdict = data.verdict === 'reject' ? 'reject' : 'approve';
      const check = !expected
        ? ({ valid: false, reason: 'hold_missing' } as const)
        : !enrolment
          ? ({ valid: false, reason: 'enrolment_missing' } as const)
          : await checkAssertion(data, expected[verdict], enrolment);
      if (!check.valid) report.invalid.push({ seq: entry.seq, hold: data.hold, reason: check.reason });
    }
  }
  return report;
}

const actionOf = (submitted: SubmittedData, verdict: string): SignedAction => ({
  hold: submitted.hold,
  connection: submitted.connection,
  tool_name: submitted.tool_name,
  agent: submitted.agent?.id ?? '',
  arguments: submitted.arguments,
  verdict: verdict === 'reject' ? 'reject' : 'approve',
});

/** The assertion of a decision entry's data, against the expected challenge and the enrolment's data. */
async function checkAssertion(
  decision: DecisionData,
  expectedChallenge: string,
  enrolment: EnrolmentData,
): Promise<SignedDecisionCheck> {
  const fail = (reason: SignedDecisionProblem): SignedDecisionCheck => ({ valid: false, reason });
  const assertion = decision.passkey as PasskeyAssertion | undefined;
  if (!assertion) return fail('not_signed');
  if (enrolment.member?.id !== decision.member?.id) return fail('wrong_member');
  if (enrolment.credential_id !== assertion.credential_id) return fail('wrong_credential');
  let clientDataBytes: Uint8Array;
  let authenticatorData: Uint8Array;
  let signature: Uint8Array;
  let clientData: { type?: unknown; challenge?: unknown; origin?: unknown };
  try {
    clientDataBytes = fromBase64url(assertion.client_data_json);
    authenticatorData = fromBase64url(assertion.authenticator_data);
    signature = fromBase64url(assertion.signature);
    clientData = JSON.parse(new TextDecoder().decode(clientDataBytes));
  } catch {
    return fail('malformed');
  }
  if (clientData.type !== 'webauthn.get') return fail('wrong_type');
  if (clientData.challenge !== expectedChallenge) return fail('challenge_mismatch');
  const rpId = String(enrolment.rp_id);
  if (typeof clientData.origin !== 'string' || hostOf(clientData.origin) !== rpId)
    return fail('wrong_origin');
  // Authenticator data: the SHA-256 of the relying party id (32 bytes), then the flags.
  if (authenticatorData.length < 37) return fail('malformed');
  const rpIdHash = new Uint8Array(await subtle().digest('SHA-256', new TextEncoder().encode(rpId)));
  if (!equalBytes(authenticatorData.subarray(0, 32), rpIdHash)) return fail('wrong_relying_party');
  const flags = authenticatorData[32]!;
  // Bit 0: the user was present; bit 2: the authenticator verified them (PIN, biometrics).
  if ((flags & 0x01) === 0 || (flags & 0x04) === 0) return fail('user_not_verified');
  const algorithm = ALGORITHMS[Number(enrolment.algorithm)];
  if (!algorithm) return fail('unsupported_algorithm');
  let key: CryptoKey;
  try {
    key = await subtle().importKey('spki', bytes(fromBase64url(enrolment.public_key)), algorithm.key, false, [
      'verify',
    ]);
  } catch {
    return fail('malformed');
  }
  const clientDataHash = new Uint8Array(await subtle().digest('SHA-256', bytes(clientDataBytes)));
  const signed = new Uint8Array(authenticatorData.length + 32);
  signed.set(authenticatorData);
  signed.set(clientDataHash, authenticatorData.length);
  const raw = algorithm.der ? derToRaw(signature) : signature;
  if (!raw) return fail('bad_signature');
  const good = await subtle().verify(algorithm.verify, key, bytes(raw), bytes(signed));
  if (!good) return fail('bad_signature');
  return {
    valid: true,
    member: { id: String(decision.member?.id), email: String(decision.member?.email) },
    credential_id: assertion.credential_id,
  };
}

/** The COSE algorithms offered at enrolment, as WebCrypto names them. */
const ALGORITHMS: Record<
  number,
  {
    key: RsaHashedImportParams | EcKeyImportParams | Algorithm;
    verify: Algorithm | EcdsaParams;
    der: boolean;
  }
> = {
  [-7]: {
    key: { name: 'ECDSA', namedCurve: 'P-256' },
    verify: { name: 'ECDSA', hash: 'SHA-256' } as EcdsaParams,
    der: true,
  },
  [-257]: {
    key: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    verify: { name: 'RSASSA-PKCS1-v1_5' },
    der: false,
  },
  [-8]: { key: { name: 'Ed25519' }, verify: { name: 'Ed25519' }, der: false },
};

/** An ECDSA signature as WebAuthn gives it (DER) in the form WebCrypto takes (r and s, 32 bytes each). */
function derToRaw(der: Uint8Array): Uint8Array | null {
  if (der[0] !== 0x30) return null;
  const out = new Uint8Array(64);
  let at = 2;
  for (const offset of [0, 32]) {
    if (der[at] !== 0x02) return null;
    const length = der[at + 1]!;
    let value = der.subarray(at + 2, at + 2 + length);
    while (value.length > 32 && value[0] === 0) value = value.subarray(1);
    if (value.length > 32) return null;
    out.set(value, offset + 32 - value.length);
    at += 2 + length;
  }
  return out;
}

function hostOf(origin: string): string | null {
  try {
    return new URL(origin).hostname;
  } catch {
    return null;
  }
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** A copy on an ArrayBuffer of its own, as WebCrypto's types want. */
const bytes = (view: Uint8Array) => new Uint8Array(view) as Uint8Array<ArrayBuffer>;

export function fromBase64url(text: string): Uint8Array {
  if (typeof text !== 'string' || !/^[A-Za-z0-9_-]*$/.test(text)) throw new TypeError('not base64url');
  const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/'));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function toBase64url(data: Uint8Array): string {
  let binary = '';
  for (const byte of data) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}
