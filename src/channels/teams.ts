/**
 * Microsoft Teams through the Bot Framework: the Bot Connector REST API (a proactive 1:1 chat or a new
 * post in a channel, a card posted and later updated) with a token from the Bot Framework's token endpoint, the check of the JWT
 * the Bot Connector signs every request to our endpoint with, and the reading of a card's button press
 * (an `adaptiveCard/action` invoke, Universal Actions). All URLs are settings, so tests run against a
 * local stand-in (test/support/teams-connector.ts).
 */
import { createPublicKey, type KeyObject, verify as verifySignature } from 'node:crypto';
import { answerJson, type HttpAnswer, type HttpClient } from '../net/http-client.ts';

/** An Adaptive Card (teams-card.ts builds the one of a hold). */
export interface TeamsCard {
  type: 'AdaptiveCard';
  version: string;
  body: unknown[];
  actions?: unknown[];
  [key: string]: unknown;
}

/** Where a card was posted: enough to update it later. */
export interface TeamsPosted {
  serviceUrl: string;
  conversationId: string;
  activityId: string;
}

/** A person (the AAD object id of a member of the tenant) or a channel (`19:…@thread.tacv2`, a new post in it). */
export type TeamsTarget = { userId: string } | { channelId: string };

export interface Teams {
  post(target: TeamsTarget, card: TeamsCard): Promise<TeamsPosted>;
  update(posted: TeamsPosted, card: TeamsCard): Promise<void>;
}

const TIMEOUT_MS = 10_000;
const SCOPE = 'https://api.botframework.com/.default';
const CARD_TYPE = 'application/vnd.microsoft.card.adaptive';

/** A Bot Framework error code (`BadSyntax`, `invalid_client`) is worth logging; anything else is not ours to. */
function errorCode(answer: HttpAnswer): string {
  const body = answerJson(answer) as { error?: unknown };
  const code = typeof body.error === 'string' ? body.error : (body.error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[\w.-]{1,60}$/.test(code) ? ` ${code}` : '';
}

/** A token for the Bot Connector (client credentials) and its lifetime in seconds. */
async function requestToken(options: {
  appId: string;
  appPassword: string;
  tokenUrl: string;
  http: HttpClient;
}): Promise<{ token: string; lifetime: number }> {
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_id: options.appId,
    client_secret: options.appPassword,
    scope: SCOPE,
  });
  const answer = await options.http.send(options.tokenUrl, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: form.toString(),
    timeoutMs: TIMEOUT_MS,
  });
  if (!answer.ok) throw new Error(`Teams token: HTTP ${answer.status}${errorCode(answer)}`);
  const body = answerJson(answer) as { access_token?: unknown; expires_in?: unknown };
  const lifetime = Number(body.expires_in);
  if (typeof body.access_token !== 'string' || !(lifetime > 0)) throw new Error('Teams token: no token');
  return { token: body.access_token, lifetime };
}

const message = (card: TeamsCard) => ({
  type: 'message',
  attachments: [{ contentType: CARD_TYPE, content: card }],
});

/**
 * What creates the conversation a card goes to: a 1:1 chat with the person (Teams answers with the same
 * one each time for the same person; the card is sent into it next), or a new post in the channel, a
 * conversation (thread) of its own made with the card as its message.
 */
function newConversation(target: TeamsTarget, card: TeamsCard, options: { appId: string; tenantId: string }) {
  const { appId, tenantId } = options;
  const common = { bot: { id: `28:${appId}` }, tenantId };
  if ('channelId' in target)
    return {
      ...common,
      isGroup: true,
      channelData: { channel: { id: target.channelId }, tenant: { id: tenantId } },
      activity: message(card),
    };
  return {
    ...common,
    isGroup: false,
    members: [{ id: target.userId }],
    channelData: { tenant: { id: tenantId } },
  };
}

export function teamsClient(options: {
  appId: string;
  appPassword: string;
  tenantId: string;
  /** `https://smba.trafficmanager.net/teams/` unless a conversation came with another. */
  serviceUrl: string;
  tokenUrl: string;
  http: HttpClient;
  now?: () => number;
}): Teams {
  const now = options.now ?? Date.now;
  let cached: { token: string; renewAt: number } | null = null;
  // Requests that need a token while one is being fetched share that fetch.
  let fetching: Promise<string> | null = null;

  async function fetchToken(): Promise<string> {
    const { token, lifetime } = await requestToken(options);
    // Renewed five minutes before it expires (half its life when that is shorter), so none expires in flight.
    const margin = Math.min(300, lifetime / 2);
    cached = { token, renewAt: now() + (lifetime - margin) * 1000 };
    return token;
  }

  async function token(): Promise<string> {
    if (cached && now() < cached.renewAt) return cached.token;
    fetching ??= fetchToken().finally(() => (fetching = null));
    return fetching;
  }

  async function call(
    what: string,
    method: 'POST' | 'PUT',
    url: string,
    body: unknown,
  ): Promise<Record<string, unknown>> {
    const bearer = await token();
    const answer = await options.http.send(url, {
      method,
      headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
      timeoutMs: TIMEOUT_MS,
    });
    // A refused token (revoked, password rotated) is fetched anew on the next attempt.
    if (answer.status === 401 && cached?.token === bearer) cached = null;
    if (!answer.ok) throw new Error(`Teams ${what}: HTTP ${answer.status}${errorCode(answer)}`);
    return answerJson(answer) as Record<string, unknown>;
  }

  const base = (serviceUrl: string) => serviceUrl.replace(/\/+$/, '');
  // Conversation ids carry `:`, `@` and `;` (`19:…@thread.tacv2;messageid=…`): one path segment each.
  const activities = (serviceUrl: string, conversationId: string) =>
    `${base(serviceUrl)}/v3/conversations/${encodeURIComponent(conversationId)}/activities`;

  return {
    async post(target, card) {
      const { serviceUrl } = options;
      const created = await call(
        'create conversation',
        'POST',
        `${base(serviceUrl)}/v3/conversations`,
        newConversation(target, card, options),
      );
      if (typeof created.id !== 'string') throw new Error('Teams create conversation: no id');
      if ('channelId' in target) {
        if (typeof created.activityId !== 'string')
          throw new Error('Teams create conversation: no activity id');
        return { serviceUrl, conversationId: created.id, activityId: created.activityId };
      }
      const sent = await call('send', 'POST', activities(serviceUrl, created.id), message(card));
      if (typeof sent.id !== 'string') throw new Error('Teams send: no id');
      return { serviceUrl, conversationId: created.id, activityId: sent.id };
    },
    async update(posted, card) {
      const url = `${activities(posted.serviceUrl, posted.conversationId)}/${encodeURIComponent(posted.activityId)}`;
      await call('update', 'PUT', url, { ...message(card), id: posted.activityId });
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Requests from the Bot Connector

export const BOT_FRAMEWORK_OPENID_METADATA =
  'https://login.botframework.com/v1/.well-known/openidconfiguration';
export const BOT_FRAMEWORK_ISSUER = 'https://api.botframework.com';

/** Who called, as the checked token says. */
export interface TeamsCaller {
  appId: string;
  /** The `serviceurl` claim (equal to the activity's `serviceUrl`), when the token has one. */
  serviceUrl: string | null;
}

export interface TeamsVerifier {
  /**
   * The caller when `authorization` is a Bot Connector token for this app and this activity, else null.
   * Rejects only when the signing keys cannot be fetched (answer 503 then: the sender retries).
   */
  verify(
    authorization: string | undefined,
    activity: { serviceUrl?: unknown; channelId?: unknown },
  ): Promise<TeamsCaller | null>;
}

const SKEW_S = 5 * 60;
/** Keys are read again after this long, and at most this often for a `kid` not seen yet. */
const KEYS_MAX_AGE_MS = 24 * 3_600_000;
const UNKNOWN_KID_EVERY_MS = 5 * 60_000;

interface SigningKey {
  key: KeyObject;
  /** The channels the key may sign for (`msteams`, …); null when the key names none. */
  endorsements: string[] | null;
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

function decodeJson(segment: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8')) as unknown;
    return value && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** The RSA signing keys of a JWK set by `kid`; keys of another kind or use, or unreadable, are left out. */
function signingKeys(set: Record<string, unknown>): Map<string, SigningKey> {
  const byKid = new Map<string, SigningKey>();
  for (const jwk of Array.isArray(set.keys) ? (set.keys as Record<string, unknown>[]) : []) {
    if (jwk?.kty !== 'RSA' || typeof jwk.kid !== 'string' || (jwk.use !== undefined && jwk.use !== 'sig'))
      continue;
    try {
      // Only the public parts: the document's own fields (endorsements, x5c) are not the key's.
      const key = createPublicKey({
        key: { kty: 'RSA', n: jwk.n as string, e: jwk.e as string },
        format: 'jwk',
      });
      const endorsements = Array.isArray(jwk.endorsements)
        ? jwk.endorsements.filter((e): e is string => typeof e === 'string')
        : null;
      byKid.set(jwk.kid, { key, endorsements });
    } catch {
      // a key we cannot read signs nothing we accept
    }
  }
  return byKid;
}

export function teamsVerifier(options: {
  appId: string;
  openIdMetadataUrl: string;
  http: HttpClient;
  now: () => number;
}): TeamsVerifier {
  let keys: { byKid: Map<string, SigningKey>; fetchedAt: number } | null = null;
  let loading: Promise<void> | null = null;

  async function getJson(url: string, what: string): Promise<Record<string, unknown>> {
    const answer = await options.http.send(url, { method: 'GET', timeoutMs: TIMEOUT_MS });
    const body = answerJson(answer);
    if (!answer.ok || !body || typeof body !== 'object')
      throw new Error(`Teams ${what}: HTTP ${answer.status}`);
    return body as Record<string, unknown>;
  }

  async function load(): Promise<void> {
    const metadata = await getJson(options.openIdMetadataUrl, 'OpenID metadata');
    if (typeof metadata.jwks_uri !== 'string') throw new Error('Teams OpenID metadata: no jwks_uri');
    const set = await getJson(metadata.jwks_uri, 'signing keys');
    keys = { byKid: signingKeys(set), fetchedAt: options.now() };
  }

  async function reload() {
    loading ??= load().finally(() => (loading = null));
    await loading;
  }

  async function keyFor(kid: string): Promise<SigningKey | null> {
    if (!keys || options.now() - keys.fetchedAt > KEYS_MAX_AGE_MS) await reload();
    let found = keys!.byKid.get(kid);
    // A new kid may be a rotated key: looked up again, but not on every request that names one.
    if (!found && options.now() - keys!.fetchedAt > UNKNOWN_KID_EVERY_MS) {
      await reload();
      found = keys!.byKid.get(kid);
    }
    return found ?? null;
  }

  return {
    async verify(authorization, activity) {
      if (typeof authorization !== 'string' || authorization.length > 16_384) return null;
      const match = /^Bearer ([^.\s]+)\.([^.\s]+)\.([^.\s]+)$/.exec(authorization);
      if (!match) return null;
      const [, head, body, signature] = match as unknown as [string, string, string, string];
      if (![head, body, signature].every((part) => SEGMENT.test(part))) return null;
      const header = decodeJson(head);
      const claims = decodeJson(body);
      // RS256 only: `none`, and HS256 "signed" with the public key as its secret, are forgeries.
      if (!header || !claims || header.alg !== 'RS256' || typeof header.kid !== 'string') return null;

      const key = await keyFor(header.kid);
      if (!key) return null;
      let signed = false;
      try {
        signed = verifySignature(
          'RSA-SHA256',
          Buffer.from(`${head}.${body}`),
          key.key,
          Buffer.from(signature, 'base64url'),
        );
      } catch {
        // a signature that cannot even be checked is a bad one
      }
      if (!signed) return null;
      // The key must be endorsed for the channel the activity says it comes from (the Bot Framework's
      // keys all name theirs; one that names none signs for no channel).
      if (!(typeof activity.channelId === 'string' && key.endorsements?.includes(activity.channelId)))
        return null;

      if (claims.iss !== BOT_FRAMEWORK_ISSUER || claims.aud !== options.appId) return null;
      const nowS = options.now() / 1000;
      if (typeof claims.exp !== 'number' || nowS > claims.exp + SKEW_S) return null;
      if (claims.nbf !== undefined && (typeof claims.nbf !== 'number' || nowS < claims.nbf - SKEW_S))
        return null;
      // The token names the service it came from (claim `serviceurl`, lower case), as the Bot Connector's
      // tokens do: an activity may not claim another.
      if (typeof claims.serviceurl !== 'string' || claims.serviceurl !== activity.serviceUrl) return null;
      return {
        appId: options.appId,
        serviceUrl: typeof claims.serviceurl === 'string' ? claims.serviceurl : null,
      };
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// A card's button press

/** An Approve or Reject pressed on a hold's card (Action.Execute). */
export interface TeamsAction {
  verb: 'approve' | 'reject';
  holdId: string;
  /** Who pressed it: their AAD object id, in the conversation's tenant. */
  aadObjectId: string;
  /** The invoke's own id (Teams may deliver an invoke again). */
  activityId: string;
  /** The id of the message that carries the card, when given (what `update` would replace). */
  replyToId: string | null;
  conversationId: string;
  /** The tenant the press came from: a member's AAD object id means something in their tenant only. */
  tenantId: string | null;
  /** When Teams says it was pressed (milliseconds), when given. */
  timestamp: number | null;
}

const record = (value: unknown): Record<string, unknown> =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
const text = (value: unknown, pattern = /^[^\p{Cc}]{1,512}$/u) =>
  typeof value === 'string' && pattern.test(value) ? value : null;

/** The press an incoming activity carries, or null when it is anything else (a message, another invoke). */
export function readTeamsAction(activity: unknown): TeamsAction | null {
  const a = record(activity);
  if (a.type !== 'invoke' || a.name !== 'adaptiveCard/action' || a.channelId !== 'msteams') return null;
  const action = record(record(a.value).action);
  if (action.type !== undefined && action.type !== 'Action.Execute') return null;
  const verb = action.verb === 'approve' || action.verb === 'reject' ? action.verb : null;
  const holdId = text(record(action.data).hold, /^[\w-]{1,100}$/);
  const from = record(a.from);
  const conversation = record(a.conversation);
  const aadObjectId = text(from.aadObjectId, /^[\w-]{1,100}$/);
  const activityId = text(a.id);
  const conversationId = text(conversation.id);
  if (!verb || !holdId || !aadObjectId || !activityId || !conversationId) return null;
  const stamp = typeof a.timestamp === 'string' ? Date.parse(a.timestamp) : NaN;
  return {
    verb,
    holdId,
    aadObjectId,
    activityId,
    replyToId: text(a.replyToId),
    conversationId,
    tenantId: text(conversation.tenantId) ?? text(record(record(a.channelData).tenant).id),
    timestamp: Number.isFinite(stamp) ? stamp : null,
  };
}

/**
 * The body of the HTTP 200 answer to an `adaptiveCard/action` invoke. With a card, Teams shows it in
 * place of the one pressed (for the person who pressed it); with a message, it shows the text as a toast
 * and leaves the card; with an error, it shows the error. Anything else reads as a failure in Teams.
 */
export const invokeAnswer = {
  card: (card: TeamsCard) => ({ statusCode: 200, type: CARD_TYPE, value: card }),
  message: (message: string) => ({
    statusCode: 200,
    type: 'application/vnd.microsoft.activity.message',
    value: message,
  }),
  error: (statusCode: 400 | 401 | 403 | 404 | 500, code: string, message: string) => ({
    statusCode,
    type: 'application/vnd.microsoft.error',
    value: { code, message },
  }),
};
