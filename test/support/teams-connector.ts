/**
 * A stand-in for Microsoft's side of a Teams bot, as one HTTP server on loopback:
 *
 * - the token endpoint (`POST /<tenant>/oauth2/v2.0/token`, client credentials for the app's id and
 *   password, scope `https://api.botframework.com/.default`), answering as Entra ID does;
 * - the Bot Framework's OpenID metadata document and its key set (an RSA key of this stand-in, endorsed
 *   for `msteams`), which the service checks inbound requests against;
 * - the Bot Connector REST API under `serviceUrl` (`/teams/`): create a 1:1 conversation or a channel's
 *   new post (its thread, made with the message), post an activity, update an activity, each refusing a
 *   bearer token it did not issue, recording every request and keeping each posted activity as it now is.
 *
 * It also plays the Bot Connector calling our endpoint: `signedActivity` signs an activity as it would
 * (RS256 JWT, its key's kid), with options for each way a forged or stale request differs, and
 * `invokeAction` builds the `adaptiveCard/action` invoke Teams sends when Approve or Reject is pressed.
 */
import { createHmac, generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { until } from './wait.ts';

export type TeamsCallKind =
  'token' | 'metadata' | 'keys' | 'createConversation' | 'postActivity' | 'updateActivity' | 'unknown';

/** One request to the stand-in, as it arrived. */
export interface TeamsCall {
  kind: TeamsCallKind;
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  /** The JSON body (null when it is not JSON: the token request is a form). */
  body: any;
  /** The status the stand-in answered with. */
  status: number;
  at: number;
}

export interface SignOptions {
  /** Signed with a key the key set does not have, under the key set's kid. */
  otherKey?: boolean;
  /** The header's kid (the key set's unless given). */
  kid?: string;
  /** `none`: unsigned; `HS256`: an HMAC with the public key (PEM) as its secret, the classic forgery. */
  alg?: 'RS256' | 'none' | 'HS256';
  aud?: string;
  iss?: string;
  /** Seconds from `now` to `exp` (3600 unless given); null leaves `exp` out. */
  expiresIn?: number | null;
  /** Seconds from `now` to `nbf` (-300 unless given, as the Bot Connector's tokens have). */
  notBefore?: number;
  /** The `serviceurl` claim: the activity's `serviceUrl` unless given; null leaves it out. */
  serviceUrl?: string | null;
  /** The whole Authorization header instead of `Bearer <token>`; null sends none. */
  authorization?: string | null;
  /** The time the token is made at (ms; now unless given). */
  now?: number;
}

export interface InvokeOptions {
  verb: string;
  holdId: string;
  aadObjectId: string;
  /** The 1:1 chat the card is in (a new `a:` id unless given), or a channel's (`19:…;messageid=…`). */
  conversationId?: string;
  /** The id of the message carrying the card. */
  replyToId?: string;
  tenantId?: string;
  channelId?: string;
  timestamp?: string;
}

export interface TeamsConnector {
  origin: string;
  appId: string;
  appPassword: string;
  tenantId: string;
  /** Base of the Bot Connector API, with a trailing slash as Teams sends it. */
  serviceUrl: string;
  tokenUrl: string;
  openIdMetadataUrl: string;
  /** Settings for a service wired to this stand-in (names proposed for config.ts). */
  env: Record<string, string>;
  calls: TeamsCall[];
  /** Every 1:1 conversation created, by id: the member and tenant it was created for. */
  conversations: Map<string, { memberId: string; tenantId: string }>;
  /** Every activity posted, as it now is (after updates), by `${conversationId}/${activityId}`. */
  activities: Map<string, any>;
  /** The card of a posted activity as it now is. */
  cardOf(posted: { conversationId: string; activityId: string }): any;
  /** People who have not installed the app: creating a chat with them is refused (403), as Teams does. */
  notInstalled: Set<string>;
  /**
   * The next `times` requests (all until `recover()` unless given) to `what` are answered with `status`
   * and an error body: `api` the Bot Connector, `token` the token endpoint, `keys` metadata and key set.
   */
  fail(options?: { status?: number; times?: number; what?: 'api' | 'token' | 'keys' }): void;
  recover(): void;
  /** Every token issued so far is refused from now on (a rotated password, a revoked grant). */
  revokeTokens(): void;
  /** A new signing key with a new kid replaces the old one in the key set (Microsoft rotates them). */
  rotateKey(): void;
  /** The kid of the current signing key. */
  kid(): string;
  /** An activity and its headers as the Bot Connector would POST them to the bot's endpoint. */
  signedActivity(
    activity: Record<string, unknown>,
    options?: SignOptions,
  ): { headers: Record<string, string>; body: string; token: string };
  /** The invoke Teams sends when Action.Execute (Approve, Reject) is pressed on a card. */
  invokeAction(options: InvokeOptions): Record<string, unknown>;
  /** Calls of `kind` (answered 2xx, matching `filter`), waiting for `count` of them. */
  waitFor(
    kind: TeamsCallKind,
    count: number,
    filter?: (call: TeamsCall) => boolean,
    timeoutMs?: number,
  ): Promise<TeamsCall[]>;
  close(): Promise<void>;
}

const ISSUER = 'https://api.botframework.com';
const SCOPE = 'https://api.botframework.com/.default';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function newKey() {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: randomBytes(12).toString('base64url'), publicKey, privateKey };
}

/** A message activity carrying attachments, as the Bot Connector takes one. */
const validMessage = (activity: any) =>
  activity?.type === 'message' &&
  Array.isArray(activity.attachments) &&
  activity.attachments.every((a: any) => typeof a?.contentType === 'string' && a.content);

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startTeamsConnector(
  options: { appId?: string; appPassword?: string; tenantId?: string } = {},
): Promise<TeamsConnector> {
  const appId = options.appId ?? randomUUID();
  const appPassword = options.appPassword ?? randomBytes(24).toString('base64url');
  const tenantId = options.tenantId ?? randomUUID();
  let key = newKey();
  const otherKey: KeyObject = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;

  const calls: TeamsCall[] = [];
  const tokens = new Map<string, number>();
  const conversations = new Map<string, { memberId: string; tenantId: string }>();
  const activities = new Map<string, any>();
  const notInstalled = new Set<string>();
  const failures: { what: 'api' | 'token' | 'keys'; status: number; left: number }[] = [];
  let sequence = 0;

  const server = http.createServer(async (request, response) => {
    const raw = await readBody(request);
    const path = (request.url ?? '').split('?')[0]!;
    const method = request.method ?? '';
    let body: any = null;
    try {
      body = JSON.parse(raw);
    } catch {
      // a form or garbage: recorded as null
    }
    const segments = path.split('/').slice(1).map(decodeURIComponent);
    let kind: TeamsCallKind = 'unknown';
    if (method === 'POST' && path === `/${tenantId}/oauth2/v2.0/token`) kind = 'token';
    else if (method === 'GET' && path === '/v1/.well-known/openidconfiguration') kind = 'metadata';
    else if (method === 'GET' && path === '/v1/.well-known/keys') kind = 'keys';
    else if (segments[0] === 'teams' && segments[1] === 'v3' && segments[2] === 'conversations') {
      if (method === 'POST' && segments.length === 3) kind = 'createConversation';
      else if (method === 'POST' && segments.length === 5 && segments[4] === 'activities')
        kind = 'postActivity';
      else if (method === 'PUT' && segments.length === 6 && segments[4] === 'activities')
        kind = 'updateActivity';
    }

    const answer = (status: number, json: unknown) => {
      calls.push({ kind, method, path, headers: request.headers, raw, body, status, at: Date.now() });
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      response.end(JSON.stringify(json));
    };

    const group = kind === 'token' ? 'token' : kind === 'metadata' || kind === 'keys' ? 'keys' : 'api';
    const failure = failures.find((f) => f.what === group && f.left > 0);
    if (failure) {
      failure.left -= 1;
      return answer(failure.status, { error: { code: 'ServiceError', message: 'Unavailable' } });
    }

    switch (kind) {
      case 'token': {
        const form = new URLSearchParams(raw);
        if (!String(request.headers['content-type']).startsWith('application/x-www-form-urlencoded'))
          return answer(400, { error: 'invalid_request' });
        if (form.get('grant_type') !== 'client_credentials')
          return answer(400, { error: 'unsupported_grant_type' });
        if (form.get('client_id') !== appId || form.get('client_secret') !== appPassword)
          return answer(401, { error: 'invalid_client' });
        if (form.get('scope') !== SCOPE) return answer(400, { error: 'invalid_scope' });
        const token = randomBytes(32).toString('base64url');
        tokens.set(token, Date.now() + 3600_000);
        return answer(200, {
          token_type: 'Bearer',
          expires_in: 3600,
          ext_expires_in: 3600,
          access_token: token,
        });
      }
      case 'metadata':
        return answer(200, {
          issuer: ISSUER,
          authorization_endpoint: 'https://invalid.botframework.com',
          jwks_uri: `${origin}/v1/.well-known/keys`,
          id_token_signing_alg_values_supported: ['RS256'],
          token_endpoint_auth_methods_supported: ['private_key_jwt'],
        });
      case 'keys':
        return answer(200, {
          keys: [
            {
              ...key.publicKey.export({ format: 'jwk' }),
              kid: key.kid,
              use: 'sig',
              endorsements: ['msteams'],
            },
          ],
        });
      case 'unknown':
        return answer(404, { error: { code: 'NotFound', message: 'Not found' } });
    }

    // The Bot Connector: only tokens this stand-in issued, and still valid.
    const bearer = /^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1];
    if (!bearer || !((tokens.get(bearer) ?? 0) > Date.now()))
      return answer(401, { message: 'Authorization has been denied for this request.' });
    if (!body || typeof body !== 'object')
      return answer(400, { error: { code: 'BadSyntax', message: 'Invalid body' } });

    if (kind === 'createConversation' && body.isGroup === true) {
      // A new post in a channel: its thread is a conversation of its own, made with the message in it.
      const channel = body.channelData?.channel?.id;
      const tenant = body.tenantId ?? body.channelData?.tenant?.id;
      if (typeof channel !== 'string' || !channel.startsWith('19:') || !validMessage(body.activity))
        return answer(400, {
          error: { code: 'BadSyntax', message: 'Incorrect conversation creation parameters' },
        });
      if (tenant !== tenantId)
        return answer(403, { error: { code: 'Forbidden', message: 'Tenant mismatch' } });
      sequence += 1;
      const activityId = `1:${Date.now()}${String(sequence).padStart(4, '0')}`;
      const id = `${channel};messageid=${activityId}`;
      activities.set(`${id}/${activityId}`, { ...body.activity, id: activityId });
      return answer(201, { id, activityId });
    }

    if (kind === 'createConversation') {
      const member = body.members?.[0]?.id;
      const tenant = body.tenantId ?? body.channelData?.tenant?.id;
      const botOk = body.bot === undefined || body.bot?.id === `28:${appId}` || body.bot?.id === appId;
      if (body.isGroup !== false || body.members?.length !== 1 || typeof member !== 'string' || !botOk)
        return answer(400, {
          error: { code: 'BadSyntax', message: 'Incorrect conversation creation parameters' },
        });
      if (tenant !== tenantId)
        return answer(403, { error: { code: 'Forbidden', message: 'Tenant mismatch' } });
      if (notInstalled.has(member))
        return answer(403, {
          error: { code: 'Forbidden', message: "Bot is not installed in user's personal scope" },
        });
      // The same person gets the same chat, as in Teams.
      const existing = [...conversations].find(([, c]) => c.memberId === member)?.[0];
      const id = existing ?? `a:${randomBytes(24).toString('base64url')}`;
      conversations.set(id, { memberId: member, tenantId: tenant });
      return answer(201, { id });
    }

    const conversationId = segments[3]!;
    // A 1:1 chat must have been created; a channel conversation (`19:…`) is taken as it is.
    if (!conversations.has(conversationId) && !conversationId.startsWith('19:'))
      return answer(404, { error: { code: 'ConversationNotFound', message: 'Conversation not found' } });
    if (!validMessage(body))
      return answer(400, { error: { code: 'BadArgument', message: 'Invalid activity' } });

    if (kind === 'postActivity') {
      sequence += 1;
      const id = `1:${Date.now()}${String(sequence).padStart(4, '0')}`;
      activities.set(`${conversationId}/${id}`, { ...body, id });
      return answer(201, { id });
    }
    const activityId = segments[5]!;
    const stored = `${conversationId}/${activityId}`;
    if (!activities.has(stored))
      return answer(404, { error: { code: 'ActivityNotFoundInConversation', message: 'Not found' } });
    activities.set(stored, { ...body, id: activityId });
    return answer(200, { id: activityId });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const serviceUrl = `${origin}/teams/`;

  function signedActivity(activity: Record<string, unknown>, o: SignOptions = {}) {
    const now = Math.floor((o.now ?? Date.now()) / 1000);
    const alg = o.alg ?? 'RS256';
    const claims: Record<string, unknown> = {
      iss: o.iss ?? ISSUER,
      aud: o.aud ?? appId,
      nbf: now + (o.notBefore ?? -300),
      iat: now,
    };
    if (o.expiresIn !== null) claims.exp = now + (o.expiresIn ?? 3600);
    const claimedUrl = o.serviceUrl === undefined ? activity.serviceUrl : o.serviceUrl;
    // The Bot Connector's claim is `serviceurl`, in lower case.
    if (claimedUrl !== null && claimedUrl !== undefined) claims.serviceurl = claimedUrl;
    const header = { alg, kid: o.kid ?? key.kid, typ: 'JWT', x5t: o.kid ?? key.kid };
    const input = `${b64(header)}.${b64(claims)}`;
    let signature = '';
    if (alg === 'RS256')
      signature = sign('RSA-SHA256', Buffer.from(input), o.otherKey ? otherKey : key.privateKey).toString(
        'base64url',
      );
    else if (alg === 'HS256')
      signature = createHmac('sha256', key.publicKey.export({ format: 'pem', type: 'spki' }))
        .update(input)
        .digest('base64url');
    const token = `${input}.${signature}`;
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    const authorization = o.authorization === undefined ? `Bearer ${token}` : o.authorization;
    if (authorization !== null) headers.authorization = authorization;
    return { headers, body: JSON.stringify(activity), token };
  }

  function invokeAction(o: InvokeOptions): Record<string, unknown> {
    const tenant = o.tenantId ?? tenantId;
    return {
      type: 'invoke',
      name: 'adaptiveCard/action',
      id: `f:${randomBytes(12).toString('hex')}`,
      timestamp: o.timestamp ?? new Date().toISOString(),
      localTimestamp: o.timestamp ?? new Date().toISOString(),
      channelId: o.channelId ?? 'msteams',
      serviceUrl,
      from: {
        id: `29:${randomBytes(16).toString('base64url')}`,
        name: 'Approver',
        aadObjectId: o.aadObjectId,
      },
      conversation: {
        conversationType: o.conversationId?.startsWith('19:') ? 'channel' : 'personal',
        tenantId: tenant,
        id: o.conversationId ?? `a:${randomBytes(24).toString('base64url')}`,
      },
      recipient: { id: `28:${appId}`, name: 'Approvals' },
      ...(o.replyToId ? { replyToId: o.replyToId } : {}),
      entities: [{ locale: 'en-US', country: 'US', platform: 'Web', type: 'clientInfo' }],
      channelData: {
        tenant: { id: tenant },
        source: { name: 'message' },
        ...(o.replyToId ? { legacy: { replyToId: o.replyToId } } : {}),
      },
      value: {
        action: { type: 'Action.Execute', verb: o.verb, data: { hold: o.holdId } },
        trigger: 'manual',
      },
      locale: 'en-US',
    };
  }

  return {
    origin,
    appId,
    appPassword,
    tenantId,
    serviceUrl,
    tokenUrl: `${origin}/${tenantId}/oauth2/v2.0/token`,
    openIdMetadataUrl: `${origin}/v1/.well-known/openidconfiguration`,
    env: {
      TEAMS_APP_ID: appId,
      TEAMS_APP_PASSWORD: appPassword,
      TEAMS_TENANT_ID: tenantId,
      TEAMS_SERVICE_URL: serviceUrl,
      TEAMS_TOKEN_URL: `${origin}/${tenantId}/oauth2/v2.0/token`,
      TEAMS_OPENID_METADATA_URL: `${origin}/v1/.well-known/openidconfiguration`,
    },
    calls,
    conversations,
    activities,
    cardOf: (posted) =>
      activities.get(`${posted.conversationId}/${posted.activityId}`)?.attachments?.[0]?.content,
    notInstalled,
    fail({ status = 500, times = Infinity, what = 'api' } = {}) {
      failures.push({ what, status, left: times });
    },
    recover() {
      failures.length = 0;
    },
    revokeTokens() {
      tokens.clear();
    },
    rotateKey() {
      key = newKey();
    },
    kid: () => key.kid,
    signedActivity,
    invokeAction,
    waitFor(kind, count, filter = () => true, timeoutMs = 5000) {
      return until(
        `${count} ${kind} calls`,
        () => {
          const found = calls.filter((c) => c.kind === kind && c.status < 300 && filter(c));
          return found.length >= count ? found : undefined;
        },
        timeoutMs,
      );
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
