/**
 * Passkeys (WebAuthn): members enrol them (passkey-enrolment.ts), sign in with them (passkey-sign-in.ts),
 * and sign approvals with them (here). A signed
 * approval's challenge is the SHA-256 of the canonical action (the SDK's `signedActionInput`), so the
 * assertion kept in the decision's evidence entry, checked against the public key kept in the member's
 * `passkey.enrolled` entry, proves offline that this member's authenticator approved exactly this action.
 * The relying party is PUBLIC_URL's host, which must be a name (WebAuthn takes no IP address).
 */
import { createHash } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
} from '@simplewebauthn/server';
import { type PasskeyAssertion, signedActionInput } from '../../packages/sdk/src/signed-decision.ts';
import type { Hold, Verdict } from '../domain/hold.ts';
import { randomId } from '../domain/ids.ts';
import type { Sql } from '../store/db.ts';
import type { Member } from '../store/members.ts';
import {
  findPasskey,
  findRequirePasskey,
  insertChallenge,
  listPasskeys,
  type Passkey,
  rememberAssertion,
  touchPasskey,
} from '../store/passkeys.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import type { ServiceContext } from './context.ts';
import { argumentsToRun, decisionEdit } from './decision-changes.ts';
import { invalid, ServiceError } from './errors.ts';
import { sha256Hex } from './hashing.ts';

export type { AuthenticationResponseJSON, RegistrationResponseJSON };

const CEREMONY_MS = 5 * 60_000;
/** ES256, EdDSA, RS256: what authenticators make, and what the SDK's offline check verifies. */
export const ALGORITHMS = [-7, -8, -257];

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

export function requireRelyingParty(ctx: ServiceContext): RelyingParty {
  const rp = relyingParty(ctx);
  if (!rp)
    throw new ServiceError(
      'conflict',
      'Passkeys need the service to be reached by a host name (PUBLIC_URL), not an IP address.',
    );
  return rp;
}

/**
 * The challenge of a decision: base64url of the SHA-256 of the canonical action and verdict. The
 * action is the call as it would run: with an approver's changes, the changed one.
 */
export function decisionChallenge(hold: Hold, verdict: Verdict): string {
  const input = signedActionInput({
    hold: hold.id,
    connection: hold.connection,
    tool_name: hold.toolName,
    agent: hold.agentId,
    arguments: argumentsToRun(hold),
    verdict,
  });
  return createHash('sha256').update(input).digest('base64url');
}

/**
 * The challenge of an approval with `changes` (argument path → new value): over the call as it would
 * run with them, as the decision checks it. Throws as the decision would when the changes are refused.
 */
export async function changedApprovalChallenge(
  sql: Sql,
  hold: Hold,
  changes: Record<string, unknown>,
): Promise<string> {
  const edit = await decisionEdit(sql, hold, 'approve', changes);
  return decisionChallenge(edit ? { ...hold, changedArguments: edit.changedArguments } : hold, 'approve');
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
  // Its challenge would verify again for this hold once the call is changed back to what it signed.
  const fresh = await rememberAssertion(tx, {
    workspaceId: hold.workspaceId,
    signatureSha256: sha256Hex(response.response.signature),
    holdId: hold.id,
    at: ctx.now(),
  });
  if (!fresh) throw invalid('passkey', 'was used for a decision before: sign this one anew');
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
export function assertionOf(sent: unknown): AuthenticationResponseJSON | null {
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
export function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/challenge/i.test(message)) return 'was made for another action or verdict (challenge mismatch)';
  if (/origin|rp ?id/i.test(message)) return 'was made for another site';
  if (/user.*verif/i.test(message)) return 'needs the authenticator to verify you (PIN or biometrics)';
  if (/counter/i.test(message))
    return 'was used before (its counter went back): the authenticator may be cloned';
  return 'does not verify';
}

export const credentialOf = (passkey: Passkey) => ({
  id: passkey.id,
  publicKey: Buffer.from(passkey.publicKey, 'base64url'),
  counter: passkey.counter,
  transports: passkey.transports as AuthenticatorTransportFuture[],
});
type AuthenticatorTransportFuture = 'ble' | 'cable' | 'hybrid' | 'internal' | 'nfc' | 'smart-card' | 'usb';

/** A WebAuthn ceremony (enrolment or sign-in): its challenge, kept for a few minutes under an id. */
export async function startCeremony(
  ctx: ServiceContext,
  challenge: string,
  purpose: string,
  memberId: string | null,
) {
  const id = randomId('wac_', 16);
  await insertChallenge(ctx.db, { id, challenge, purpose, memberId, expiresAt: ctx.now() + CEREMONY_MS });
  return id;
}
