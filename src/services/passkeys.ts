/**
 * Passkeys (WebAuthn): members enrol them, sign in with them, and sign approvals with them. A signed
 * approval's challenge is the SHA-256 of the canonical action (the SDK's `signedActionInput`), so the
 * assertion kept in the decision's evidence entry, checked against the public key kept in the member's
 * `passkey.enrolled` entry, proves offline that this member's authenticator approved exactly this action.
 * The relying party is PUBLIC_URL's host, which must be a name (WebAuthn takes no IP address).
 */
import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { decodeCredentialPublicKey } from '@simplewebauthn/server/helpers';
import { type PasskeyAssertion, signedActionInput } from '../../packages/sdk/src/signed-decision.ts';
import type { Hold, Verdict } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import { findMember, type Member } from '../store/members.ts';
import {
  deletePasskey,
  findPasskey,
  findPasskeyForSignIn,
  findRequirePasskey,
  insertChallenge,
  insertPasskey,
  listPasskeys,
  type Passkey,
  takeChallenge,
  touchPasskey,
} from '../store/passkeys.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';
import { invalid, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { type AppSession, startSession } from './sign-in.ts';

export type { AuthenticationResponseJSON, RegistrationResponseJSON };

const CEREMONY_MS = 5 * 60_000;
/** ES256, EdDSA, RS256: what authenticators make, and what the SDK's offline check verifies. */
const ALGORITHMS = [-7, -8, -257];

interface RelyingParty {
  id: string;
  origin: string;
}

/** PUBLIC_URL's host and origin; passkeys are off when the host is an IP address. */
export function relyingParty(ctx: ServiceContext): RelyingParty | null {
  const url = URL.parse(ctx.publicUrl);
  if (!url || /^[\d.]+$|^\[/.test(url.hostname)) return null;
  return { id: url.hostname, origin: url.origin };
}

function requireRelyingParty(ctx: ServiceContext): RelyingParty {
  const rp = relyingParty(ctx);
  if (!rp)
    throw new ServiceError(
      'conflict',
      'Passkeys need the service to be reached by a host name (PUBLIC_URL), not an IP address.',
    );
  return rp;
}

/** The challenge of a decision: base64url of the SHA-256 of the canonical action and verdict. */
export function decisionChallenge(hold: Hold, verdict: Verdict): string {
  const input = signedActionInput({
    hold: hold.id,
    connection: hold.connection,
    tool_name: hold.toolName,
    agent: hold.agentId,
    arguments: hold.arguments,
    verdict,
  });
  return createHash('sha256').update(input).digest('base64url');
}

/**
 * Whether approving the hold needs a passkey signature: the workspace requires one on every approval
 * (`approvals.require_passkey`), or the rule that decided the hold says `signed: true`. Read when the
 * decision is made, from the configuration in force (whose changes are evidenced).
 */
export async function passkeyRequired(sql: Sql, hold: Hold): Promise<boolean> {
  if (await findRequirePasskey(sql, hold.workspaceId)) return true;
  if (hold.ruleName === null) return false;
  const { rules } = await findRuleSet(sql, hold.workspaceId);
  return rules.some((rule) => rule.name === hold.ruleName && rule.signed === true);
}

/**
 * The passkey part of a decision, inside its transaction: null when the decision needs none and brings
 * none; the assertion to keep in the evidence when it is good. Throws (nothing is stored) when a
 * required signature is missing, or an assertion is not the member's, not over this action, or bad.
 */
export async function checkDecisionPasskey(
  tx: Sql,
  ctx: ServiceContext,
  hold: Hold,
  member: { id: string },
  verdict: Verdict,
  sent: unknown,
): Promise<PasskeyAssertion | null> {
  const required = verdict === 'approve' && (await passkeyRequired(tx, hold));
  const response = assertionOf(sent);
  if (!response) {
    if (required)
      throw invalid('passkey', 'this approval must be signed with your passkey: approve on the hold page');
    return null;
  }
  const rp = requireRelyingParty(ctx);
  const passkey =
    typeof response.id === 'string' ? await findPasskey(tx, hold.workspaceId, response.id) : null;
  if (!passkey || passkey.memberId !== member.id)
    throw invalid('passkey', 'is not one of your enrolled passkeys');
  const expectedChallenge = decisionChallenge(hold, verdict);
  let verified;
  try {
    verified = await verifyAuthenticationResponse({
      response,
      expectedChallenge: (challenge) => challenge === expectedChallenge,
      expectedOrigin: rp.origin,
      expectedRPID: rp.id,
      credential: credentialOf(passkey),
      requireUserVerification: true,
    });
  } catch (error) {
    throw invalid('passkey', reasonOf(error));
  }
  if (!verified.verified) throw invalid('passkey', 'the signature does not verify');
  await touchPasskey(tx, passkey, verified.authenticationInfo.newCounter, ctx.now());
  return {
    credential_id: passkey.id,
    authenticator_data: response.response.authenticatorData,
    client_data_json: response.response.clientDataJSON,
    signature: response.response.signature,
  };
}

/**
 * The browser's assertion (AuthenticationResponseJSON), as an object or its JSON text (a form field);
 * null when none was sent. Throws when something was sent that is not one.
 */
function assertionOf(sent: unknown): AuthenticationResponseJSON | null {
  if (sent === undefined || sent === null || sent === '') return null;
  let value: unknown = sent;
  if (typeof sent === 'string') {
    try {
      value = JSON.parse(sent);
    } catch {
      value = null;
    }
  }
  const candidate = value as { id?: unknown; response?: Record<string, unknown> } | null;
  const parts = ['authenticatorData', 'clientDataJSON', 'signature'];
  if (
    typeof candidate?.id !== 'string' ||
    typeof candidate.response !== 'object' ||
    candidate.response === null ||
    !parts.every((part) => typeof candidate.response![part] === 'string')
  )
    throw invalid('passkey', 'is not a WebAuthn assertion');
  return {
    type: 'public-key',
    clientExtensionResults: {},
    rawId: candidate.id,
    ...candidate,
  } as unknown as AuthenticationResponseJSON;
}

/** What an approve button needs to ask for the member's passkey: null when the hold needs no signature. */
export interface PasskeyPrompt {
  /** The decision's challenge (base64url): the hash of the action and the verdict `approve`. */
  challenge: string;
  /** The member's credential ids; none: they have yet to enrol one. */
  credentials: string[];
}

export async function passkeyPrompt(
  ctx: ServiceContext,
  hold: Hold,
  member: Pick<Member, 'id'>,
): Promise<PasskeyPrompt | null> {
  if (hold.status !== 'pending' || !(await passkeyRequired(ctx.db, hold))) return null;
  const passkeys = await listPasskeys(ctx.db, hold.workspaceId, member.id);
  return {
    challenge: decisionChallenge(hold, 'approve'),
    credentials: passkeys.map((passkey) => passkey.id),
  };
}

/** What the library's refusal means, in words that never repeat what was sent. */
function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/challenge/i.test(message)) return 'was made for another action or verdict (challenge mismatch)';
  if (/origin|rp ?id/i.test(message)) return 'was made for another site';
  if (/user.*verif/i.test(message)) return 'needs the authenticator to verify you (PIN or biometrics)';
  if (/counter/i.test(message))
    return 'was used before (its counter went back): the authenticator may be cloned';
  return 'does not verify';
}

const credentialOf = (passkey: Passkey) => ({
  id: passkey.id,
  publicKey: Buffer.from(passkey.publicKey, 'base64url'),
  counter: passkey.counter,
  transports: passkey.transports as AuthenticatorTransportFuture[],
});
type AuthenticatorTransportFuture = 'ble' | 'cable' | 'hybrid' | 'internal' | 'nfc' | 'smart-card' | 'usb';

// ---------------------------------------------------------------------------------------------------
// Enrolment
// ---------------------------------------------------------------------------------------------------

/** The options of navigator.credentials.create for the signed-in member, and the ceremony they belong to. */
export async function enrolmentOptions(ctx: ServiceContext, session: AppSession) {
  const rp = requireRelyingParty(ctx);
  const { member } = session;
  const existing = await listPasskeys(ctx.db, member.workspaceId, member.id);
  const options = await generateRegistrationOptions({
    rpName: session.workspace.name,
    rpID: rp.id,
    userName: member.email,
    userDisplayName: member.name,
    userID: new TextEncoder().encode(member.id),
    attestationType: 'none',
    excludeCredentials: existing.map((passkey) => ({ id: passkey.id })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  const ceremony = await startCeremony(ctx, options.challenge, 'enrol', member.id);
  return { ceremony, options };
}

/** Keeps the new passkey and its public key in the evidence, in one transaction. */
export async function enrolPasskey(
  ctx: ServiceContext,
  session: AppSession,
  input: { ceremony: string; response: RegistrationResponseJSON; name: string },
): Promise<Passkey> {
  const rp = requireRelyingParty(ctx);
  const { member } = session;
  const name = input.name.trim().slice(0, 100) || 'Passkey';
  return ctx.db.transaction(async (tx) => {
    const taken = await takeChallenge(tx, input.ceremony, 'enrol', ctx.now());
    if (!taken || taken.memberId !== member.id)
      throw invalid('passkey', 'this enrolment has expired: start again');
    let verified;
    try {
      verified = await verifyRegistrationResponse({
        response: input.response,
        expectedChallenge: taken.challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        requireUserVerification: true,
        supportedAlgorithmIDs: ALGORITHMS,
      });
    } catch (error) {
      throw invalid('passkey', reasonOf(error));
    }
    if (!verified.verified) throw invalid('passkey', 'the authenticator response does not verify');
    const { credential } = verified.registrationInfo;
    const { spki, algorithm } = publicKeyOf(credential.publicKey);
    const passkey: Passkey = {
      id: credential.id,
      workspaceId: member.workspaceId,
      memberId: member.id,
      publicKey: Buffer.from(credential.publicKey).toString('base64url'),
      algorithm,
      counter: credential.counter,
      transports: credential.transports ?? [],
      name,
      createdAt: ctx.now(),
      lastUsedAt: null,
    };
    const chain = await openChain(tx, ctx, member.workspaceId);
    await insertPasskey(tx, passkey);
    await chain.append('passkey.enrolled', {
      member: { id: member.id, email: member.email, name: member.name },
      credential_id: passkey.id,
      name,
      algorithm,
      public_key: spki,
      rp_id: rp.id,
    });
    return passkey;
  });
}

export const listMemberPasskeys = (ctx: ServiceContext, member: Member) =>
  listPasskeys(ctx.db, member.workspaceId, member.id);

/** A member removes one of their own passkeys; evidenced. */
export async function removePasskey(ctx: ServiceContext, member: Member, id: string): Promise<boolean> {
  return ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, member.workspaceId);
    if (!(await deletePasskey(tx, member.workspaceId, member.id, id))) return false;
    await chain.append('passkey.removed', {
      member: { id: member.id, email: member.email, name: member.name },
      credential_id: id,
    });
    return true;
  });
}

/**
 * The public key as SubjectPublicKeyInfo (DER, base64url), which WebCrypto imports as it is: what the
 * evidence keeps, so an offline check needs no CBOR.
 */
function publicKeyOf(cosePublicKey: Uint8Array): { spki: string; algorithm: number } {
  const cose = decodeCredentialPublicKey(new Uint8Array(cosePublicKey)) as unknown as Map<number, unknown>;
  const b64 = (key: number) => Buffer.from(cose.get(key) as Uint8Array).toString('base64url');
  const kty = cose.get(1);
  const algorithm = Number(cose.get(3));
  let jwk: JsonWebKey;
  if (kty === 2) jwk = { kty: 'EC', crv: 'P-256', x: b64(-2), y: b64(-3) };
  else if (kty === 1) jwk = { kty: 'OKP', crv: 'Ed25519', x: b64(-2) };
  else if (kty === 3) jwk = { kty: 'RSA', n: b64(-1), e: b64(-2) };
  else throw invalid('passkey', 'uses a key type this service does not take');
  const spki = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'der' });
  return { spki: spki.toString('base64url'), algorithm };
}

// ---------------------------------------------------------------------------------------------------
// Signing in
// ---------------------------------------------------------------------------------------------------

async function startCeremony(
  ctx: ServiceContext,
  challenge: string,
  purpose: string,
  memberId: string | null,
) {
  const id = randomId('wac_', 16);
  await insertChallenge(ctx.db, { id, challenge, purpose, memberId, expiresAt: ctx.now() + CEREMONY_MS });
  return id;
}

/** The options of navigator.credentials.get for signing in: any passkey of this site (discoverable). */
export async function signInOptions(ctx: ServiceContext) {
  const rp = requireRelyingParty(ctx);
  const options = await generateAuthenticationOptions({ rpID: rp.id, userVerification: 'required' });
  return { ceremony: await startCeremony(ctx, options.challenge, 'sign_in', null), options };
}

/** Opens a session for the member whose passkey signed the ceremony's challenge; null when it did not. */
export async function signInWithPasskey(
  ctx: ServiceContext,
  input: { ceremony: string; response: AuthenticationResponseJSON },
): Promise<{ sessionId: string } | null> {
  const rp = relyingParty(ctx);
  if (!rp || typeof input.response?.id !== 'string') return null;
  return ctx.db.transaction(async (tx) => {
    const taken = await takeChallenge(tx, input.ceremony, 'sign_in', ctx.now());
    const passkey = taken && (await findPasskeyForSignIn(tx, input.response.id));
    const member = passkey && (await findMember(tx, passkey.workspaceId, passkey.memberId));
    if (!taken || !passkey || !member) return null;
    try {
      const verified = await verifyAuthenticationResponse({
        response: input.response,
        expectedChallenge: taken.challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        credential: credentialOf(passkey),
        requireUserVerification: true,
      });
      if (!verified.verified) return null;
      await touchPasskey(tx, passkey, verified.authenticationInfo.newCounter, ctx.now());
    } catch {
      return null;
    }
    return { sessionId: await startSession(tx, ctx, member) };
  });
}
