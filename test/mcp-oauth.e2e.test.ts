/**
 * Issue 25, done when: real MCP clients that start with OAuth connect to an MCP server of a workspace
 * with nothing pasted. The MCP v2 SDK client's own OAuth flow, and `mcp-remote` without `--header`,
 * each find the authorization server from the 401, register, send the member to the consent page (in
 * headless Chromium, where a member is signed in and clicks Allow), exchange the code, and call an
 * allowed, a held and a denied tool with the token.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  Client,
  type OAuthClientMetadata,
  type OAuthClientProvider,
  type OAuthDiscoveryState,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
  StreamableHTTPClientTransport,
  UnauthorizedError,
} from '@modelcontextprotocol/client';
import type { Browser } from 'playwright-core';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { browserSkip, closeBrowser, launchBrowser } from './support/browser.ts';
import { NODE, ROOT } from './support/cli.ts';
import { freePort, type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const CONFIG = (upstream: string) => `members:
  - { email: admin@acme.test, name: Admin, role: admin }
mcp_servers:
  - { slug: rec, name: Recorder, url: "${upstream}" }
tools:
  - { connection: Recorder, tool: record, classification: allow }
  - { connection: Recorder, tool: send, classification: approval }
  - { connection: Recorder, tool: drop, classification: deny }
`;

/** What an MCP client keeps between runs, in memory: its registration, tokens and PKCE verifier. */
class MemoryOAuthProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  expectedState: string | undefined;
  private client: StoredOAuthClientInformation | undefined;
  private saved: StoredOAuthTokens | undefined;
  private verifier: string | undefined;
  private discovery: OAuthDiscoveryState | undefined;
  readonly redirectUrl: string;

  constructor(redirectUrl: string) {
    this.redirectUrl = redirectUrl;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK e2e client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    this.expectedState = randomUUID();
    return this.expectedState;
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    if (!this.verifier) throw new Error('no code verifier saved');
    return this.verifier;
  }
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
}

/** The client's redirect URI: resolves with the query the authorization server sends the browser back with. */
function callbackServer(port: number) {
  let server: http.Server;
  const received = new Promise<URLSearchParams>((resolve) => {
    server = http
      .createServer((request, response) => {
        const url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
        response.end('You can close this window.');
        if (url.pathname === '/callback') resolve(url.searchParams);
      })
      .listen(port, '127.0.0.1');
  });
  return { received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

interface Envelope {
  status: string;
}
const envelopeOf = (result: { content?: unknown }) =>
  (JSON.parse((result.content as { text: string }[])[1]!.text) as { service: Envelope }).service;

for (const backend of backends) {
  describe(`MCP clients connect with OAuth on ${backend.name}`, { skip: backend.skip ?? browserSkip }, () => {
    let t: TestService;
    let upstream: RecordingUpstream;
    let browser: Browser;
    const app = appClient(() => t);

    before(async () => {
      upstream = await startRecordingUpstream();
      upstream.offer('send', 'drop');
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      browser = await launchBrowser();
    });
    after(async () => {
      await closeBrowser(browser);
      await t?.close();
      await upstream?.close();
    });

    /** A member signed in in a fresh browser opens the authorization URL, reads the consent page and allows. */
    async function allowInBrowser(workspace: { slug: string }, member: { cookie: string }, url: string) {
      const context = await browser.newContext();
      try {
        await context.addCookies([{ name: 'approvals_session', value: member.cookie, url: t.url }]);
        const page = await context.newPage();
        await page.goto(url);
        await page.getByRole('heading', { name: /^Allow / }).waitFor();
        assert.ok((await page.textContent('main'))?.includes(`/mcp/${workspace.slug}/rec`));
        await page.getByRole('button', { name: 'Allow' }).click();
        // The browser goes on to the client's redirect URI, which answers with a page of its own.
        await page.waitForURL((target) => !target.href.startsWith(t.url));
      } finally {
        await context.close();
      }
    }

    test('the MCP SDK client: 401, discovery, registration, consent in Chromium, then allowed, held and denied calls', async () => {
      const { workspace } = await t.workspace({ config: CONFIG(upstream.url) });
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const mcpUrl = new URL(`${t.url}/mcp/${workspace.slug}/rec`);
      const port = await freePort();
      const provider = new MemoryOAuthProvider(`http://127.0.0.1:${port}/callback`);
      const connect = async () => {
        const client = new Client({ name: 'oauth-e2e', version: '1' });
        await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
        return client;
      };

      await assert.rejects(connect(), UnauthorizedError);
      assert.ok(provider.authorizationUrl, 'the client was sent to authorize');
      assert.equal(provider.authorizationUrl.searchParams.get('resource'), mcpUrl.href);
      assert.equal(provider.authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
      const callback = callbackServer(port);
      try {
        await allowInBrowser(workspace, admin, provider.authorizationUrl.href);
        const query = await callback.received;
        assert.equal(query.get('state'), provider.expectedState);
        await new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }).finishAuth(query);
      } finally {
        await callback.close();
      }

      const client = await connect();
      try {
        const allowed = await client.callTool({ name: 'record', arguments: { text: 'sdk' } });
        assert.deepEqual(allowed.content, [{ type: 'text', text: 'recorded: sdk' }]);
        assert.equal(
          envelopeOf(await client.callTool({ name: 'send', arguments: { to: 'a' } })).status,
          'held',
        );
        await assert.rejects(client.callTool({ name: 'drop', arguments: {} }), /Denied by policy/);
      } finally {
        await client.close();
      }
      assert.ok(provider.tokens()?.refresh_token, 'a refresh token was issued');
    });

    test('mcp-remote without --header: its printed link, consent in Chromium, then the same three calls over stdio', async () => {
      const { workspace } = await t.workspace({ config: CONFIG(upstream.url) });
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const configDir = mkdtempSync(join(tmpdir(), 'mcp-remote-'));
      const port = await freePort();
      const child = spawn(
        NODE,
        [
          join(ROOT, 'node_modules/mcp-remote/dist/proxy.js'),
          `${t.url}/mcp/${workspace.slug}/rec`,
          String(port),
          '--transport',
          'http-only',
        ],
        // No browser opens: the test reads the link it prints and opens it in Chromium itself.
        { env: { ...process.env, MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'true' }, stdio: 'pipe' },
      );
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const lines: Record<string, unknown>[] = [];
      let partial = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        partial += chunk;
        const parts = partial.split('\n');
        partial = parts.pop()!;
        for (const line of parts) if (line.trim()) lines.push(JSON.parse(line) as Record<string, unknown>);
      });
      const send = (message: Record<string, unknown>) => child.stdin.write(`${JSON.stringify(message)}\n`);
      const answer = (id: number) =>
        until(`mcp-remote's answer ${id}`, () => lines.find((line) => line.id === id), 30_000);
      try {
        const link = await until(
          'the authorization link mcp-remote prints',
          () => stderr.match(/Please authorize this client by visiting:\s*\n(\S+)/)?.[1],
          30_000,
        );
        await allowInBrowser(workspace, admin, link);
        await until(
          'mcp-remote to connect',
          () => (/Connected to remote server/.test(stderr) ? true : undefined),
          30_000,
        );

        send({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'stdio-test', version: '1' },
          },
        });
        await answer(1);
        send({ jsonrpc: '2.0', method: 'notifications/initialized' });
        const call = (id: number, name: string, args: Record<string, unknown>) => {
          send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
          return answer(id);
        };
        const allowed = (await call(2, 'record', { text: 'remote' })) as { result: { content: unknown } };
        assert.deepEqual(allowed.result.content, [{ type: 'text', text: 'recorded: remote' }]);
        const held = (await call(3, 'send', { to: 'b' })) as { result: { content?: unknown } };
        assert.equal(envelopeOf(held.result).status, 'held');
        const denied = (await call(4, 'drop', {})) as { error: { code: number; message: string } };
        assert.equal(denied.error.code, -32003);
      } catch (error) {
        throw new Error(`${(error as Error).message}\nmcp-remote said:\n${stderr.slice(-3000)}`, {
          cause: error,
        });
      } finally {
        child.kill();
        rmSync(configDir, { recursive: true, force: true });
      }
      // Listed on the keys page under the name mcp-remote registered with.
      assert.match((await app.get(admin, '/app/admin/keys')).text, /MCP CLI Proxy/);
    });
  });
}
