/** Signing in with a passkey: any passkey of this site (discoverable), no e-mail address typed. */
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  verifyAuthenticationResponse,
} from '@simplewebauthn/server';
import { findMember } from '../store/members.ts';
import { findPasskeyForSignIn, takeChallenge, touchPasskey } from '../store/passkeys.ts';
import type { ServiceContext } from './context.ts';
import { credentialOf, relyingParty, requireRelyingParty, startCeremony } from './passkeys.ts';
import { startSession } from './sign-in.ts';

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
    return { sessionId: await startSession(tx, ctx, member, 'passkey') };
  });
}
