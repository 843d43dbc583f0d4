/**
 * The OAuth library's storage (its Adapter interface), on the service's database: clients,
 * interactions, codes, tokens and its grants, one row each in `oauth_records`, whichever backend.
 * An object's id is often a bearer secret (a token, a code, a session cookie): rows are keyed by its
 * hash, and the payload's copy of it (`jti`) is not stored; `find`, given the id, puts it back.
 */
import {
  consumeOAuthRecord,
  destroyOAuthRecordsOfGrant,
  findOAuthRecordGrant,
  destroyOAuthRecord,
  findOAuthRecord,
  findOAuthRecordByUid,
  type OAuthRecord,
  upsertOAuthRecord,
} from '../store/oauth.ts';
import type { Sql } from '../store/db.ts';
import type { ServiceContext } from './context.ts';
import { errors } from 'oidc-provider';
import { oauthGrantRevokedByClient, oauthRecordId } from './oauth.ts';
import { registrationSource, storeRegisteredClient, UNUSED_CLIENT_HOURS } from './oauth-registrations.ts';

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
  // Every model but Client is the library's own token-like object, whose `jti` is its id (a Session's
  // is its cookie). The library finds a Session by `uid` too, without the id: only to read who signed in.
  const keepsId = model === 'Client';
  const withId = (id: string, payload: Payload | undefined) =>
    payload && (keepsId ? payload : { ...payload, jti: id });
  return {
    async upsert(id: string, payload: Payload, expiresIn?: number) {
      const stored = { ...payload };
      if (!keepsId) delete stored.jti;
      // Read here, in the registering request's context: SQLite runs a batch of transactions in the
      // context of whichever queued first (another request, a worker), where it would be another's.
      const registeredFrom = model === 'Client' ? registrationSource() : null;
      const write = (sql: Sql) =>
        upsertOAuthRecord(sql, model, oauthRecordId(id), {
          payload: stored,
          // A grant is its own grant: revoking one deletes it with its tokens.
          grantId: model === 'Grant' ? id : typeof payload.grantId === 'string' ? payload.grantId : null,
          uid: typeof payload.uid === 'string' ? payload.uid : null,
          clientId: model === 'Client' ? id : null,
          // A client is stored once, as it registers: it lives a day unless a member allows it.
          expiresAt:
            model === 'Client'
              ? now() + UNUSED_CLIENT_HOURS * 3_600_000
              : expiresIn
                ? now() + expiresIn * 1000
                : null,
          registeredFrom,
          now: now(),
        });
      // A client being registered is stored only if its address has room, counted as it is stored.
      if (model === 'Client') await storeRegisteredClient(ctx, write);
      else await write(ctx.db);
    },
    find: async (id: string) =>
      withId(id, payloadOf(await findOAuthRecord(ctx.db, model, oauthRecordId(id), now()))),
    findByUid: async (uid: string) => payloadOf(await findOAuthRecordByUid(ctx.db, model, uid, now())),
    // The device flow is not enabled: no object has a user code.
    findByUserCode: async () => undefined,
    /**
     * The library reads `consumed` first, then consumes: two requests with one code or refresh token
     * at once could both pass that read. The second to mark it finds it marked, and is refused as a
     * reuse is: its grant ends.
     */
    async consume(id: string) {
      if ((await consumeOAuthRecord(ctx.db, model, oauthRecordId(id), now())) > 0) return;
      const grantId = await findOAuthRecordGrant(ctx.db, model, oauthRecordId(id));
      if (grantId) await oauthGrantRevokedByClient(ctx, grantId);
      throw new errors.InvalidGrant('grant request is invalid');
    },
    async destroy(id: string) {
      await destroyOAuthRecord(ctx.db, model, oauthRecordId(id));
    },
    async revokeByGrantId(grantId: string) {
      await destroyOAuthRecordsOfGrant(ctx.db, model, grantId);
    },
  };
}
