/**
 * A member's P-256 passkey enrolled straight into storage, and what their authenticator would answer
 * for a challenge on the service's relying party (`localhost`): for decision tests that need a real
 * signature without a browser. `counting`: the authenticator's counter goes up with each assertion;
 * otherwise it stays 0, as synced passkeys' do.
 */
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { insertPasskey } from '../../src/store/passkeys.ts';
import type { TestService } from './service.ts';

export async function enrolTestPasskey(
  t: TestService,
  passkey: { id: string; workspaceId: string; memberId: string; counting?: boolean },
) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });
  // COSE EC2 P-256 key: {1: 2, 3: -7, -1: 1, -2: x, -3: y}, CBOR by hand.
  const cose = Buffer.concat([
    Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]),
    Buffer.from(jwk.x!, 'base64url'),
    Buffer.from([0x22, 0x58, 0x20]),
    Buffer.from(jwk.y!, 'base64url'),
  ]);
  const { id, workspaceId, memberId } = passkey;
  await insertPasskey(t.service.ctx.db, {
    ...{ id, workspaceId, memberId, publicKey: cose.toString('base64url'), algorithm: -7, counter: 0 },
    ...{ transports: [], name: id, createdAt: t.clock.now(), lastUsedAt: null },
  });
  const origin = new URL(t.url.replace('127.0.0.1', 'localhost')).origin;
  const sha = (data: Buffer | string) => createHash('sha256').update(data).digest();
  let counter = 0;
  return (challenge: string) => {
    if (passkey.counting) counter += 1;
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin }));
    // The relying party's hash, flags "user present" and "verified", the counter (4 bytes).
    const authenticatorData = Buffer.concat([sha('localhost'), Buffer.from([0x05, 0, 0, 0, counter])]);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha(clientData)]), privateKey);
    return {
      id,
      response: {
        authenticatorData: authenticatorData.toString('base64url'),
        clientDataJSON: clientData.toString('base64url'),
        signature: signature.toString('base64url'),
      },
    };
  };
}
