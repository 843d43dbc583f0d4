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
import { passkeyChangedMail, passkeyLinkMail } from '../channels/messages.ts';
import { type PasskeyAssertion, signedActionInput } from '../../packages/sdk/src/signed-decision.ts';
import type { Hold, Verdict } from '../domain/hold.ts';
import { base64url, randomBytes, randomId } from '../domain/ids.ts';
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
import { findLoginToken, insertLoginToken, useLoginToken } from '../store/sessions.ts';
import type { ServiceContext } from './context.ts';
import { invalid, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
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

/**
 * The options of navigator.credentials.create for the signed-in member, and the ceremony they belong to.
 * A member who has passkeys first confirms with one of them (`confirm`: the options of
 * navigator.credentials.get over the same challenge); one who has none needs a link sent to their own
 * e-mail (`sendEnrolmentLink`). So a session alone, however it was got, never adds a passkey.
 */
export async function enrolmentOptions(ctx: ServiceContext, session: AppSession) {
  const rp = requireRelyingParty(ctx);
  const { member } = session;
  const existing = await listPasskeys(ctx.db, member.workspaceId, member.id);
  // Existing credentials are not excluded: the confirmation may come from the same device, and a
  // device enrolled again replaces its own key there (the old one can then be removed here).
  const options = await generateRegistrationOptions({
    rpName: session.workspace.name,
    rpID: rp.id,
    userName: member.email,
    userDisplayName: member.name,
    userID: new TextEncoder().encode(member.id),
    attestationType: 'none',
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
    supportedAlgorithmIDs: ALGORITHMS,
  });
  const ceremony = await startCeremony(ctx, options.challenge, 'enrol', member.id);
  const confirm =
    existing.length === 0
      ? null
      : {
          challenge: options.challenge,
          rpId: rp.id,
          userVerification: 'required',
          allowCredentials: existing.map((passkey) => ({ type: 'public-key', id: passkey.id })),
        };
  return { ceremony, options, confirm };
}

/** What allowed an enrolment: an existing passkey of the member, or a link sent to their own e-mail. */
type Authorization = { passkey: string } | 'email_link';

/**
 * Keeps the new passkey and its public key in the evidence, in one transaction, once an existing
 * passkey of the member signed the ceremony's challenge (`confirmation`) or a link sent to their own
 * e-mail is used (`link`); then tells the member by e-mail. Nobody adds a passkey for someone else: the
 * member is the session's, and nothing in the input names another.
 */
export async function enrolPasskey(
  ctx: ServiceContext,
  session: AppSession,
  input: {
    ceremony: string;
    response: RegistrationResponseJSON;
    name: string;
    confirmation?: unknown;
    link?: string;
  },
): Promise<Passkey> {
  const rp = requireRelyingParty(ctx);
  const { member } = session;
  const name = input.name.trim().slice(0, 100) || 'Passkey';
  const passkey = await ctx.db.transaction(async (tx) => {
    const taken = await takeChallenge(tx, input.ceremony, 'enrol', ctx.now());
    if (!taken || taken.memberId !== member.id)
      throw invalid('passkey', 'this enrolment has expired: start again');
    const authorization = await authorize(tx, ctx, member, taken.challenge, input);
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
      authorized_by: authorization,
    });
    return passkey;
  });
  await announce(ctx, session, 'added', passkey.name);
  return passkey;
}

/** The enrolment's proof that the member, not just their session, asks: an existing passkey or the e-mailed link. */
async function authorize(
  tx: Sql,
  ctx: ServiceContext,
  member: Member,
  challenge: string,
  input: { confirmation?: unknown; link?: string },
): Promise<Authorization> {
  const rp = requireRelyingParty(ctx);
  const confirmation = input.confirmation ? assertionOf(input.confirmation) : null;
  if (confirmation) {
    const existing = await findPasskey(tx, member.workspaceId, confirmation.id);
    if (!existing || existing.memberId !== member.id)
      throw invalid('passkey', 'must be confirmed with one of your own passkeys');
    try {
      const verified = await verifyAuthenticationResponse({
        response: confirmation,
        expectedChallenge: challenge,
        expectedOrigin: rp.origin,
        expectedRPID: rp.id,
        credential: credentialOf(existing),
        requireUserVerification: true,
      });
      if (!verified.verified) throw new Error('does not verify');
      await touchPasskey(tx, existing, verified.authenticationInfo.newCounter, ctx.now());
    } catch {
      throw invalid('passkey', 'the confirmation with your existing passkey does not verify');
    }
    return { passkey: existing.id };
  }
  if (input.link && (await useLoginToken(tx, sha256Hex(input.link), ctx.now(), 'enrol')) === member.id)
    return 'email_link';
  throw invalid(
    'passkey',
    'needs one of your existing passkeys, or the link sent to your own e-mail (Send me a link)',
  );
}

/** Tells the member about a passkey added or removed, by e-mail (best effort: the change is made). */
async function announce(ctx: ServiceContext, session: AppSession, change: 'added' | 'removed', name: string) {
  await ctx.mailer
    ?.send({
      to: session.member.email,
      ...passkeyChangedMail(session.workspace.name, change, name, `${ctx.publicUrl}/app/settings/passkeys`),
    })
    .catch(() => undefined);
}

export const ENROL_LINK_MINUTES = 15;

/**
 * A link to add a passkey, sent to the member's own e-mail and shown to nobody: what a member without a
 * passkey (or who lost theirs) needs besides their session. Refused without e-mail set up.
 */
export async function sendEnrolmentLink(ctx: ServiceContext, session: AppSession): Promise<void> {
  const { member } = session;
  const mailer = ctx.mailer;
  if (!mailer)
    throw new ServiceError(
      'conflict',
      'A passkey is added with a link sent to your e-mail, and e-mail is not set up on this service.',
    );
  const token = base64url(randomBytes(32));
  const now = ctx.now();
  const expiresAt = now + ENROL_LINK_MINUTES * 60_000;
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, member.workspaceId);
    await insertLoginToken(tx, {
      tokenHash: sha256Hex(token),
      memberId: member.id,
      createdAt: now,
      expiresAt,
      purpose: 'enrol',
    });
    await chain.append('passkey.enrolment_link', {
      member: { id: member.id, email: member.email },
      delivery: 'email',
      expires_at: new Date(expiresAt).toISOString(),
    });
  });
  await mailer.send({
    to: member.email,
    ...passkeyLinkMail(
      session.workspace.name,
      `${ctx.publicUrl}/app/settings/passkeys/enrol/${token}`,
      ENROL_LINK_MINUTES,
    ),
  });
}

/** Whether an enrolment link can still be used by this member (its page shows the form, its POST uses it). */
export async function enrolmentLinkUsable(
  ctx: ServiceContext,
  member: Member,
  token: string,
): Promise<boolean> {
  const row = await findLoginToken(ctx.db, sha256Hex(token), 'enrol');
  return !!row && row.memberId === member.id && row.usedAt === null && row.expiresAt > ctx.now();
}

export const listMemberPasskeys = (ctx: ServiceContext, member: Member) =>
  listPasskeys(ctx.db, member.workspaceId, member.id);

/** A member removes one of their own passkeys; evidenced, and told by e-mail. */
export async function removePasskey(ctx: ServiceContext, session: AppSession, id: string): Promise<boolean> {
  const { member } = session;
  const removed = await ctx.db.transaction(async (tx) => {
    const passkey = await findPasskey(tx, member.workspaceId, id);
    if (!passkey || passkey.memberId !== member.id) return null;
    const chain = await openChain(tx, ctx, member.workspaceId);
    await deletePasskey(tx, member.workspaceId, member.id, id);
    await chain.append('passkey.removed', {
      member: { id: member.id, email: member.email, name: member.name },
      credential_id: id,
    });
    return passkey;
  });
  if (removed) await announce(ctx, session, 'removed', removed.name);
  return removed !== null;
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
