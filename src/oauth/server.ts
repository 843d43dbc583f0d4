/**
 * The service as the OAuth 2.1 authorization server of its MCP servers (the MCP authorization
 * specification), built on `oidc-provider`: authorization code with PKCE (S256 only), resource
 * indicators binding every token to one MCP server of one workspace, Dynamic Client Registration and
 * Client ID Metadata Documents, short-lived opaque access tokens and rotating refresh tokens, its state
 * in the service's database. Consent is a page of the app (app/pages/oauth-consent.ts).
 *
 * Its endpoints live under /oauth; its metadata at /.well-known/oauth-authorization-server (RFC 8414),
 * each MCP server's protected resource metadata at /.well-known/oauth-protected-resource/mcp/<ws>/<srv>
 * (RFC 9728). The issuer is PUBLIC_URL, and every URL the library writes is built from it, whatever
 * Host a request names.
 */
import { createPrivateKey, type JsonWebKey } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Provider, { type Configuration, errors, type KoaContextWithOIDC } from 'oidc-provider';
import { html } from '../markup/html.ts';
import { ANONYMOUS_LIMIT } from '../web/guard.ts';
import { checkLimit, type RateCounter } from '../web/rate-limiter.ts';
import type { ServiceContext } from '../services/context.ts';
import {
  ACCESS_TOKEN_SECONDS,
  GRANT_DAYS,
  MCP_SCOPE,
  mcpResourceUrl,
  oauthGrantRevokedByClient,
  REFRESH_TOKEN_DAYS,
  resolveMcpResource,
} from '../services/oauth.ts';
import { oauthRecords } from '../services/oauth-records.ts';
import {
  REGISTRATION_BYTES,
  registeringFrom,
  registrationRoom,
  tooManyRegistrationsDescription,
} from '../services/oauth-registrations.ts';

/** Where the consent page is: the library sets its interaction cookie for this path only. */
export const consentPath = (uid: string) => `/app/oauth/${uid}`;

/** Scopes a client may ask for beside `mcp`, which every request gets: an ID token, a refresh token. */
export const OIDC_SCOPES = ['openid', 'offline_access'];
/** Registrations a minute from one address: a hosted assistant registers for each of its users. */
const REGISTRATIONS_PER_MINUTE = 120;
/** The library's endpoints, each at its one spelling: authorization (and its resumption), token, registration, revocation, keys. */
const OAUTH_PATHS = /^\/oauth\/(?:authorize(?:\/[A-Za-z0-9_-]+)?|token|register|revoke|jwks)$/;

/** The page the library's errors are shown on: their fixed codes and texts, escaped. */
const errorPage = (error: string, description: string | undefined) =>
  html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Authorization failed</title>
      </head>
      <body>
        <h1>Authorization failed</h1>
        <p><code>${error}</code></p>
        <p>${description ?? ''}</p>
      </body>
    </html>`.toString();

/** PKCS #8 framing of a raw Ed25519 seed (RFC 8410). */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The key the library signs ID tokens with (a client that asks for `openid`): the same on every
 * instance, derived from the secrets key, as are the keys of its cookies.
 */
function signingJwk(ctx: ServiceContext): JsonWebKey {
  const seed = ctx.sealer.derive('oauth: ID token signing key');
  const key = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
  return key.export({ format: 'jwk' });
}

/** Every endpoint of the library under /oauth, those it does not serve too (their features are off). */
const ROUTES: Configuration['routes'] = {
  authorization: '/oauth/authorize',
  token: '/oauth/token',
  registration: '/oauth/register',
  revocation: '/oauth/revoke',
  jwks: '/oauth/jwks',
  end_session: '/oauth/session/end',
  introspection: '/oauth/introspect',
  userinfo: '/oauth/userinfo',
  pushed_authorization_request: '/oauth/par',
  device_authorization: '/oauth/device/auth',
  code_verification: '/oauth/device',
  backchannel_authentication: '/oauth/backchannel',
  challenge: '/oauth/challenge',
};

/** Every token is for exactly one MCP server of this service, named as the `resource` (RFC 8707). */
function resourceIndicators(
  ctx: ServiceContext,
): NonNullable<Configuration['features']>['resourceIndicators'] {
  return {
    enabled: true,
    // A client must name the MCP server it wants: a token without one would be good nowhere.
    defaultResource: async (_ctx, _client, oneOf) => {
      if (oneOf) return oneOf;
      throw new errors.InvalidTarget('the resource parameter is required: the URL of the MCP server');
    },
    useGrantedResource: async () => true,
    getResourceServerInfo: async (oidc, resource) => {
      if (Array.isArray(oidc.oidc.params?.resource))
        throw new errors.InvalidTarget('name exactly one MCP server as the resource');
      if (!(await resolveMcpResource(ctx, resource)))
        throw new errors.InvalidTarget('the resource is not an MCP server of this service');
      return {
        scope: MCP_SCOPE,
        audience: resource,
        accessTokenFormat: 'opaque',
        accessTokenTTL: ACCESS_TOKEN_SECONDS,
      };
    },
  };
}

function configuration(ctx: ServiceContext): Configuration {
  return {
    adapter: (name: string) => oauthRecords(ctx, name),
    jwks: { keys: [signingJwk(ctx) as never] },
    cookies: {
      keys: [ctx.sealer.derive('oauth: cookie keys').toString('base64url')],
      names: { session: 'oauth_session', interaction: 'oauth_interaction', resume: 'oauth_resume' },
    },
    routes: ROUTES,
    responseTypes: ['code'],
    scopes: [MCP_SCOPE, 'offline_access'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    clientDefaults: {
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    },
    // S256 is the only method the library knows; a request without a challenge is refused.
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      userinfo: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
      revocation: { enabled: true },
      registration: { enabled: true, initialAccessToken: false, issueRegistrationAccessToken: false },
      clientIdMetadataDocument: { enabled: true, ack: 'draft-02' },
      resourceIndicators: resourceIndicators(ctx),
    },
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    // A client that revokes any of its tokens ends its grant, as a member's revocation does: recorded,
    // and gone from the keys page (the library would otherwise keep a grant with no token left).
    revokeGrantPolicy: () => true,
    rotateRefreshToken: true,
    // Tokens live by their own times, not the library's browser session.
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: ACCESS_TOKEN_SECONDS,
      AuthorizationCode: 60,
      RefreshToken: REFRESH_TOKEN_DAYS * 86_400,
      Grant: GRANT_DAYS * 86_400,
      Interaction: 15 * 60,
      Session: 15 * 60,
      IdToken: 5 * 60,
    },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    // Fixed texts from the library's error, never a value from the request.
    renderError: async (koa, out) => {
      koa.type = 'html';
      koa.body = errorPage(out.error, out.error_description);
    },
    // A Client ID Metadata Document is fetched with the library's guard against internal addresses,
    // unless the operator allows them (ALLOW_PRIVATE_TARGETS, as for webhooks and MCP upstreams).
    fetch: (url, options) => {
      if (!ctx.allowPrivateTargets) return globalThis.fetch(url, options);
      const unguarded: RequestInit & { dispatcher?: unknown } = { ...options };
      delete unguarded.dispatcher;
      return globalThis.fetch(url, unguarded);
    },
    // Only the grant this very authorization was given on the consent page, never an earlier one:
    // each authorization is a member's decision.
    loadExistingGrant: async (koa) => {
      const grantId = koa.oidc.result?.consent?.grantId;
      return grantId ? koa.oidc.provider.Grant.find(grantId) : undefined;
    },
    interactions: { url: (_ctx, interaction) => consentPath(interaction.uid) },
    clockTolerance: 0,
  };
}

export interface OAuthServer {
  /** The library's object, made at first use (the public URL is known once the server listens). */
  provider(): Provider;
}

/**
 * The library's object, as it serves behind the service: at PUBLIC_URL (see `oauthServer`'s
 * `handleRequest`), the first leg of an authorization guarded, its events logged and recorded.
 */
function buildProvider(app: FastifyInstance, ctx: ServiceContext): Provider {
  const built = new Provider(ctx.publicUrl, configuration(ctx));
  // Behind the service's own view of its address: see `handleRequest`.
  built.proxy = true;
  built.use(firstLegOfAuthorization(ctx));
  built.on('grant.revoked', (_koa: KoaContextWithOIDC, grantId: string) => {
    oauthGrantRevokedByClient(ctx, grantId).catch((error: unknown) =>
      app.log.error({ err: error }, 'a grant the OAuth server revoked could not be recorded'),
    );
  });
  built.on('server_error', (_koa: KoaContextWithOIDC, error: Error) =>
    app.log.error({ err: error }, 'OAuth server error'),
  );
  return built;
}

/**
 * The library's middleware for the first leg of an authorization (not its resumption after consent,
 * /oauth/authorize/<uid>): GET only, the scopes it asks for settled, and no redirect away from us.
 */
function firstLegOfAuthorization(ctx: ServiceContext): Parameters<Provider['use']>[0] {
  return async (koa, next) => {
    if (koa.path !== '/oauth/authorize') return next();
    if (koa.method !== 'GET') {
      koa.status = 405;
      koa.set('Allow', 'GET');
      return;
    }
    // Every request asks for the MCP server, plus the library's own scopes it names; nothing else
    // (a client asking only `openid`, or a scope of its own, would get consent and no usable token).
    const asked = String(koa.query.scope ?? '').split(' ');
    const query: Record<string, unknown> = {
      ...koa.query,
      scope: [MCP_SCOPE, ...OIDC_SCOPES.filter((scope) => asked.includes(scope))].join(' '),
    };
    // Answers go back in the query of a redirect only (no auto-posting form), which is checked below.
    delete query.response_mode;
    koa.query = query as typeof koa.query;
    await next();
    // Anyone may register a client with any redirect URI, so the first leg never sends the browser
    // there by itself (an error, `prompt=none`): our origin is nobody's redirector. The answer
    // goes back to the client only after a member decided on the consent page.
    const location = koa.response.get('location');
    if (koa.status < 300 || koa.status >= 400 || !location) return;
    const target = new URL(location, ctx.publicUrl);
    if (target.origin === new URL(ctx.publicUrl).origin) return;
    koa.remove('location');
    koa.status = 400;
    koa.type = 'html';
    koa.body = errorPage(
      target.searchParams.get('error') ?? 'invalid_request',
      target.searchParams.get('error_description') ?? undefined,
    );
  };
}

/** A request the library is not given, as it is answered (RFC 6749's error shape). */
interface Refusal {
  status: number;
  retryAfterSeconds?: number;
  error: string;
  description: string;
}

/**
 * Registering and starting an authorization need no credential and write a row: an address gets a
 * quota for them, apart from its other requests without a key. A registration comes from a client's
 * server (a hosted assistant's, for all of its users) and gets more. Undefined: within the quota.
 */
async function quotaRefusal(
  ctx: ServiceContext,
  counter: RateCounter,
  ip: string,
  register: boolean,
): Promise<Refusal | undefined> {
  const limit = register
    ? await checkLimit(counter, `ip:${ip}:oauth-register`, REGISTRATIONS_PER_MINUTE, ctx.now())
    : await checkLimit(counter, `ip:${ip}:oauth-authorize`, ANONYMOUS_LIMIT, ctx.now());
  if (!limit.allowed)
    return {
      status: 429,
      retryAfterSeconds: limit.resetSeconds,
      error: 'rate_limited',
      description: 'too many requests from this address',
    };
}

/**
 * A registration the library is not given: one without a short stated length, or from an address
 * with no room left for another.
 */
async function registrationRefusal(
  ctx: ServiceContext,
  request: FastifyRequest,
): Promise<Refusal | undefined> {
  // Counted before the library reads it: a registration states its length, and a short one.
  const length = request.headers['content-length'];
  if (length === undefined)
    return { status: 411, error: 'invalid_request', description: 'Content-Length is required' };
  if (Number(length) > REGISTRATION_BYTES)
    return { status: 413, error: 'invalid_request', description: 'the request is too large' };
  // An address keeps only so many clients nobody has allowed yet (RFC 7591's error shape).
  const room = await registrationRoom(ctx, request.ip);
  if (!room.allowed)
    return {
      status: 429,
      retryAfterSeconds: room.retryAfterSeconds,
      error: 'too_many_registrations',
      description: tooManyRegistrationsDescription(),
    };
}

/**
 * A refusal sent. The checks above return what to send, not the reply: it is thenable, and an async
 * function returning it would wait for it to be sent (and resolve to nothing).
 */
function refuse(reply: FastifyReply, { status, retryAfterSeconds, error, description }: Refusal) {
  reply.code(status);
  if (retryAfterSeconds !== undefined) reply.header('Retry-After', String(retryAfterSeconds));
  return reply.send({ error, error_description: description });
}

/** RFC 9728: what an MCP client reads first, from the 401 or from this well-known address. */
function protectedResourceRoute(app: FastifyInstance, ctx: ServiceContext) {
  app.get<{ Params: { workspace: string; server: string } }>(
    '/.well-known/oauth-protected-resource/mcp/:workspace/:server',
    async (request, reply) => {
      const resource = mcpResourceUrl(ctx, request.params.workspace, request.params.server);
      const found = await resolveMcpResource(ctx, resource);
      reply.header('Access-Control-Allow-Origin', '*');
      if (!found) return reply.code(404).send({ error: 'not_found' });
      return reply.header('Cache-Control', 'public, max-age=300').send({
        resource,
        authorization_servers: [ctx.publicUrl],
        scopes_supported: [MCP_SCOPE],
        bearer_methods_supported: ['header'],
        resource_name: `${found.server.name} (${found.workspace.name})`,
      });
    },
  );
}

/** The authorization server's routes, and the library's object for the consent page. */
export function oauthServer(app: FastifyInstance, ctx: ServiceContext, counter: RateCounter): OAuthServer {
  let provider: Provider | undefined;
  let handle: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | undefined;
  const made = () => {
    if (provider) return { provider, handle: handle! };
    provider = buildProvider(app, ctx);
    handle = provider.callback() as typeof handle;
    return { provider, handle: handle! };
  };

  /** Hands the raw request to the library, as if it came to PUBLIC_URL. */
  const handleRequest = async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]!;
    // The library's router ignores case and a trailing slash; ours serves each endpoint at its one
    // spelling, so the checks below (and the first leg's, in the library's middleware) see every request.
    if (path.startsWith('/oauth/') && !OAUTH_PATHS.test(path))
      return reply.code(404).send({ error: 'not_found' });
    const register = path === '/oauth/register' && request.method === 'POST';
    if (register || path === '/oauth/authorize') {
      const refusal =
        (await quotaRefusal(ctx, counter, request.ip, register)) ??
        (register ? await registrationRefusal(ctx, request) : undefined);
      if (refusal) return refuse(reply, refusal);
    }
    const publicUrl = new URL(ctx.publicUrl);
    request.raw.headers['x-forwarded-host'] = publicUrl.host;
    request.raw.headers['x-forwarded-proto'] = publicUrl.protocol.slice(0, -1);
    reply.hijack();
    // A client the library registers is stored with the address it came from (oauth-registrations.ts),
    // if the address still has room as it is stored: registrations sent at once all passed the check above.
    await registeringFrom(
      request.ip,
      (retryAfterSeconds) => reply.raw.setHeader('Retry-After', String(retryAfterSeconds)),
      () => made().handle(request.raw, reply.raw),
    );
  };

  void app.register(async (scope) => {
    // The library reads its bodies itself (forms, JSON): leave the stream unread.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    for (const url of [
      '/oauth/*',
      '/.well-known/oauth-authorization-server',
      '/.well-known/openid-configuration',
    ])
      scope.route({ method: ['GET', 'POST', 'OPTIONS'], url, handler: handleRequest });
  });
  protectedResourceRoute(app, ctx);

  return { provider: () => made().provider };
}
