/**
 * An OAuth client at the level of HTTP requests, as an MCP client makes them against the service's
 * authorization server (oauth/server.ts): register, authorize with PKCE and a resource, let a signed-in
 * member decide on the consent page, exchange the code, refresh. Each step can be bent to be refused.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import type { Session } from './app-client.ts';

export const REDIRECT_URI = 'http://127.0.0.1:9/callback';

export interface Tokens {
  access_token: string;
  refresh_token?: string;
  expires_in: number;
  token_type: string;
  scope: string;
}

const base64url = (bytes: Buffer) => bytes.toString('base64url');

/** Cookies the authorization server sets, sent back on every request (paths aside: it reads its own by name). */
class CookieJar {
  private readonly cookies = new Map<string, string>();
  take(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
  }
  header(extra?: string) {
    const all = [...this.cookies].map(([name, value]) => `${name}=${value}`);
    if (extra) all.push(extra);
    return all.join('; ');
  }
}

export interface Authorization {
  /** Where the authorization server sent the browser: the consent page, or back to the client. */
  location: string;
  status: number;
  verifier: string;
  state: string;
  jar: CookieJar;
  text: string;
}

export function oauthClient(baseUrl: string) {
  async function register(metadata: Record<string, unknown> = {}) {
    const response = await fetch(`${baseUrl}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Test assistant',
        redirect_uris: [REDIRECT_URI],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        ...metadata,
      }),
    });
    const body = (await response.json()) as { client_id: string };
    assert.equal(response.status, 201, JSON.stringify(body));
    return body.client_id;
  }

  /** GET /oauth/authorize; `pkce: 'plain' | 'none'` asks as a client that would be refused. */
  async function authorize(
    clientId: string,
    resource: string | null,
    options: {
      pkce?: 'S256' | 'plain' | 'none';
      redirectUri?: string;
      scope?: string;
      prompt?: string;
      responseMode?: string;
    } = {},
  ): Promise<Authorization> {
    const verifier = base64url(randomBytes(32));
    const state = base64url(randomBytes(12));
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: options.redirectUri ?? REDIRECT_URI,
      state,
    });
    if (resource !== null) query.set('resource', resource);
    if (options.scope) query.set('scope', options.scope);
    if (options.prompt) query.set('prompt', options.prompt);
    if (options.responseMode) query.set('response_mode', options.responseMode);
    const pkce = options.pkce ?? 'S256';
    if (pkce === 'S256') {
      query.set('code_challenge', base64url(createHash('sha256').update(verifier).digest()));
      query.set('code_challenge_method', 'S256');
    } else if (pkce === 'plain') {
      query.set('code_challenge', verifier);
      query.set('code_challenge_method', 'plain');
    }
    const jar = new CookieJar();
    const response = await fetch(`${baseUrl}/oauth/authorize?${query}`, { redirect: 'manual' });
    jar.take(response);
    return {
      location: response.headers.get('location') ?? '',
      status: response.status,
      verifier,
      state,
      jar,
      text: await response.text(),
    };
  }

  /** The consent page as the member sees it (GET), with the authorization server's cookies. */
  async function consentPage(auth: Authorization, member: Session) {
    const response = await fetch(new URL(auth.location, baseUrl), {
      headers: { cookie: auth.jar.header(`approvals_session=${member.cookie}`) },
      redirect: 'manual',
    });
    return { status: response.status, text: await response.text() };
  }

  /**
   * The member decides; on `allow`, follows the authorization server back to the client and answers
   * the query it would receive (`code`, `state`, `iss`), or the consent page's refusal.
   */
  async function decide(auth: Authorization, member: Session, verdict: 'allow' | 'refuse') {
    const page = new URL(auth.location, baseUrl);
    const decided = await fetch(page, {
      method: 'POST',
      headers: {
        cookie: auth.jar.header(`approvals_session=${member.cookie}`),
        'content-type': 'application/x-www-form-urlencoded',
        origin: new URL(baseUrl).origin,
      },
      body: new URLSearchParams({ _csrf: member.csrf, verdict }),
      redirect: 'manual',
    });
    auth.jar.take(decided);
    let location = decided.headers.get('location');
    const text = await decided.text();
    if (!location) return { status: decided.status, text, query: null };
    // Back through the authorization server (it resumes the request) to the client's redirect URI.
    while (location && !location.startsWith(REDIRECT_URI)) {
      const next: Response = await fetch(new URL(location, baseUrl), {
        headers: { cookie: auth.jar.header() },
        redirect: 'manual',
      });
      auth.jar.take(next);
      location = next.headers.get('location');
      await next.arrayBuffer();
    }
    assert.ok(location, 'the authorization server did not send the browser back to the client');
    return { status: decided.status, text, query: new URL(location).searchParams };
  }

  async function token(form: Record<string, string>) {
    const response = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(form),
    });
    return { status: response.status, body: (await response.json()) as Tokens & { error?: string } };
  }

  /** The code the client received for `auth`, exchanged at the token endpoint with its PKCE verifier. */
  const exchange = (auth: Authorization, query: URLSearchParams, clientId: string, resource: string) =>
    token({
      grant_type: 'authorization_code',
      code: query.get('code') ?? '',
      redirect_uri: REDIRECT_URI,
      code_verifier: auth.verifier,
      client_id: clientId,
      resource,
    });

  /** Register, authorize, allow as `member`, exchange the code: a client's whole first connection. */
  async function connect(member: Session, resource: string) {
    const clientId = await register();
    const auth = await authorize(clientId, resource);
    const { query } = await decide(auth, member, 'allow');
    assert.equal(query?.get('state'), auth.state);
    const exchanged = await exchange(auth, query!, clientId, resource);
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    return { clientId, tokens: exchanged.body };
  }

  return { register, authorize, consentPage, decide, token, exchange, connect };
}

/** An MCP `initialize` sent with a bearer token: the status and the challenge it gets. */
export async function mcpAnswerWith(url: string, token: string) {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'oauth-test', version: '1' },
      },
    }),
  });
  await response.arrayBuffer();
  return { status: response.status, challenge: response.headers.get('www-authenticate') };
}
