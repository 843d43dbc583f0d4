/**
 * Issue 25: a client that identifies itself with a Client ID Metadata Document (its `client_id` is an
 * https URL where its metadata is) needs no registration: the authorization server fetches the
 * document, and the consent page names the client from it. The service runs as its own process,
 * trusting a test certificate authority (NODE_EXTRA_CA_CERTS) and allowed to reach loopback
 * (ALLOW_PRIVATE_TARGETS), where the document is served over https.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { appClient } from './support/app-client.ts';
import { backends, type Storage } from './support/backends.ts';
import { type RecordingUpstream, startRecordingUpstream } from './support/mcp-upstream.ts';
import { mcpAnswerWith, oauthClient, REDIRECT_URI } from './support/oauth-client.ts';
import { killServerProcesses, type ServerProcess, startServerProcess } from './support/server-process.ts';
import type { TestService } from './support/service.ts';

/** A self-signed certificate for 127.0.0.1, made with openssl: its own authority. */
function loopbackCertificate(dir: string) {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  return { key: readFileSync(key), cert: readFileSync(cert), certFile: cert };
}

for (const backend of backends) {
  describe(`Client ID Metadata Documents on ${backend.name}`, { skip: backend.skip }, () => {
    let dir: string;
    let storage: Storage;
    let ctx: ServiceContext;
    let service: ServerProcess;
    let documents: https.Server;
    let documentUrl: string;
    let upstream: RecordingUpstream;
    let fetched = 0;
    let certFile: string;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'cimd-'));
      const tls = loopbackCertificate(dir);
      certFile = tls.certFile;
      documents = https.createServer({ key: tls.key, cert: tls.cert }, (request, response) => {
        fetched += 1;
        response.setHeader('content-type', 'application/json');
        response.end(
          JSON.stringify({
            client_id: documentUrl,
            client_name: 'Metadata document client',
            redirect_uris: [REDIRECT_URI],
            token_endpoint_auth_method: 'none',
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
          }),
        );
      });
      await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve));
      documentUrl = `https://127.0.0.1:${(documents.address() as AddressInfo).port}/clients/assistant.json`;
      upstream = await startRecordingUpstream();
      storage = await backend.create();
      const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
      ctx = await openContext(
        loadConfig({ ...settings, LOG_LEVEL: 'silent', ALLOW_PRIVATE_TARGETS: 'true' }),
      );
      service = await startServerProcess(storage, {
        NODE_EXTRA_CA_CERTS: tls.certFile,
        ALLOW_PRIVATE_TARGETS: 'true',
      });
    });
    after(async () => {
      await killServerProcesses();
      await ctx?.db.close();
      await storage?.drop();
      await upstream?.close();
      documents?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test('the client_id is its metadata document: fetched, named on the consent page, and the token works', async () => {
      const workspace = await createWorkspace(ctx, { slug: 'cimd', name: 'Acme' });
      await applyConfig(
        ctx,
        workspace,
        parseConfig(
          `members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n` +
            `mcp_servers:\n  - { slug: rec, name: Recorder, url: "${upstream.url}" }\n`,
        ),
      );
      const app = appClient(() => ({ url: service.url, service: { ctx } }) as unknown as TestService);
      const admin = await app.signIn(workspace, 'admin@acme.test');
      const oauth = oauthClient(service.url);
      const resource = `${service.url}/mcp/cimd/rec`;

      const metadata = (await (
        await fetch(`${service.url}/.well-known/oauth-authorization-server`)
      ).json()) as {
        client_id_metadata_document_supported?: boolean;
      };
      assert.equal(metadata.client_id_metadata_document_supported, true);

      const auth = await oauth.authorize(documentUrl, resource);
      assert.equal(auth.status, 303, auth.text);
      assert.ok(fetched > 0, 'the authorization server fetched the document');
      const page = await oauth.consentPage(auth, admin);
      assert.equal(page.status, 200);
      assert.match(page.text, /Metadata document client/);
      const { query } = await oauth.decide(auth, admin, 'allow');
      const exchanged = await oauth.exchange(auth, query!, documentUrl, resource);
      assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
      const answer = await mcpAnswerWith(resource, exchanged.body.access_token);
      assert.equal(answer.status, 200);

      // A redirect URI the document does not list is refused, as for a registered client.
      const elsewhere = await oauth.authorize(documentUrl, resource, {
        redirectUri: 'http://127.0.0.1:9/other',
      });
      assert.equal(elsewhere.status, 400);
      assert.equal(elsewhere.location, '');
    });

    test('without ALLOW_PRIVATE_TARGETS a document on an internal address is never fetched', async () => {
      const guarded = await startServerProcess(storage, { NODE_EXTRA_CA_CERTS: certFile });
      const before = fetched;
      const refused = await oauthClient(guarded.url).authorize(documentUrl, `${guarded.url}/mcp/cimd/rec`);
      assert.equal(refused.status, 400);
      assert.equal(refused.location, '', 'an unknown client is never redirected to');
      assert.equal(fetched, before, 'the loopback address was not reached');
      guarded.child.kill('SIGTERM');
      await guarded.exited;
    });
  });
}
