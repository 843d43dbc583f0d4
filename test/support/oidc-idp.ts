/**
 * A company identity provider for the tests: `oidc-provider` on 127.0.0.1 with one confidential client,
 * its accounts given by the test, and a browser (`signInAt`) that signs an account in through the
 * provider's own login and consent steps and comes back with the callback URL (code and state).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface IdpAccount {
  email: string;
  email_verified: boolean;
  name?: string;
  groups?: string[];
}

export interface TestIdp {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, IdpAccount>;
  /** Drives the provider from the authorization URL as a fresh browser would; the URL it sends back to. */
  signInAt(authorizationUrl: string, accountId: string): Promise<string>;
  close(): Promise<void>;
}

export async function startTestIdp(redirectUri: string): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const accounts = new Map<string, IdpAccount>();
  const clientId = 'approvals';
  const clientSecret = 'a-client-secret-of-the-test-idp';
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: { email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    cookies: { keys: ['test-idp-cookie-key'] },
    async findAccount(_ctx, sub) {
      const account = accounts.get(sub);
      return account && { accountId: sub, claims: () => ({ sub, ...account }) };
    },
  });
  server.on('request', provider.callback());

  async function signInAt(authorizationUrl: string, accountId: string): Promise<string> {
    const jar = new Map<string, string>();
    const keep = (response: Response) => {
      for (const cookie of response.headers.getSetCookie()) {
        const [pair] = cookie.split(';');
        const at = pair!.indexOf('=');
        jar.set(pair!.slice(0, at), pair!.slice(at + 1));
      }
    };
    const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    let url = authorizationUrl;
    let loggedIn = false;
    let step = 0;
    for (; step < 10 && url.startsWith(issuer); step += 1) {
      const interaction = new URL(url).pathname.match(/^\/interaction\/([^/]+)$/);
      const response = interaction
        ? await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie() },
            body: new URLSearchParams(
              loggedIn ? { prompt: 'consent' } : { prompt: 'login', login: accountId },
            ).toString(),
            redirect: 'manual',
          })
        : await fetch(url, { headers: { cookie: cookie() }, redirect: 'manual' });
      keep(response);
      if (interaction) loggedIn = true;
      const location = response.headers.get('location');
      if (!location) throw new Error(`the provider answered ${response.status}: ${await response.text()}`);
      url = new URL(location, url).href;
    }
    return url;
  }

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    signInAt,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
