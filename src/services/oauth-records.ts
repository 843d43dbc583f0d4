/**
 * The OAuth library's storage (its Adapter interface), on the service's database: clients,
 * interactions, codes, tokens and its grants, one row each in `oauth_records`, whichever backend.
 * An object's id is often a bearer secret (a token, a code, a session cookie): rows are keyed by its
 * hash, and the payload's copy of it (`jti`) is not stored; `find`, given the id, puts it back.
 */
import {
  consumeOAuthRecord,
  destroyOAuthGrantRecords,
  destroyOAuthRecord,
  findOAuthRecord,
  findOAuthRecordByUid,
  type OAuthRecord,
  upsertOAuthRecord,
} from '../store/oauth.ts';
import type { ServiceContext } from './context.ts';
import { oauthRecordId } from './oauth.ts';

type Payload = Record<string, unknown>;

/**
 * What the library reads back: its payload, marked `consumed` (in its unit, seconds) once it was: a used
 * code, a rotated refresh token.
 */
const payloadOf = (record: OAuthRecord | undefined): Payload | undefined =>
  record &&
  (record.consumedAt === null
    ? record.payload
    : { ...record.payload, consumed: Math.floor(record.consumedAt / 1000) });

export function oauthRecords(ctx: ServiceContext, model: string) {
  const now = () => ctx.now();
  // Every model but Client is the library's own token-like object, whose `jti` is its id. A Session
  // keeps its copy: the library also finds it by `uid`, without the id. It only says who signed in;
  // every authorization still asks for consent in the app.
  const keepsId = model === 'Client' || model === 'Session';
  const withId = (id: string, payload: Payload | undefined) =>
    payload && (keepsId ? payload : { ...payload, jti: id });
  return {
    async upsert(id: string, payload: Payload, expiresIn?: number) {
      const stored = { ...payload };
      if (!keepsId) delete stored.jti;
      await upsertOAuthRecord(ctx.db, model, oauthRecordId(id), {
        payload: JSON.stringify(stored),
        // A grant is its own grant: revoking one deletes it with its tokens.
        grantId: model === 'Grant' ? id : typeof payload.grantId === 'string' ? payload.grantId : null,
        uid: typeof payload.uid === 'string' ? payload.uid : null,
        expiresAt: expiresIn ? now() + expiresIn * 1000 : null,
      });
    },
    find: async (id: string) =>
      withId(id, payloadOf(await findOAuthRecord(ctx.db, model, oauthRecordId(id), now()))),
    findByUid: async (uid: string) => payloadOf(await findOAuthRecordByUid(ctx.db, model, uid, now())),
    // The device flow is not enabled: no object has a user code.
    findByUserCode: async () => undefined,
    async consume(id: string) {
      await consumeOAuthRecord(ctx.db, model, oauthRecordId(id), now());
    },
    async destroy(id: string) {
      await destroyOAuthRecord(ctx.db, model, oauthRecordId(id));
    },
    async revokeByGrantId(grantId: string) {
      await destroyOAuthGrantRecords(ctx.db, grantId);
    },
  };
}
