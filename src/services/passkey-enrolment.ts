/**
 * Passkey enrolment: a member adds a passkey (confirmed with one they have, or with a link sent to their
 * own e-mail), lists and removes their own; each change is evidenced and told to the member by e-mail.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import {
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import { decodeCredentialPublicKey } from '@simplewebauthn/server/helpers';
import { passkeyChangedMail, passkeyLinkMail } from '../channels/messages.ts';
import { base64url, randomBytes } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import type { Member } from '../store/members.ts';
import {
  deletePasskey,
  findPasskey,
  insertPasskey,
  listPasskeys,
  type Passkey,
  takeChallenge,
  touchPasskey,
} from '../store/passkeys.ts';
import { findLoginToken, insertLoginToken, useLoginToken } from '../store/sessions.ts';
import type { ServiceContext } from './context.ts';
import { invalid, ServiceError } from './errors.ts';
import { openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import {
  ALGORITHMS,
  assertionOf,
  credentialOf,
  reasonOf,
  requireRelyingParty,
  startCeremony,
} from './passkeys.ts';
import type { AppSession } from './sign-in.ts';

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
