/**
 * The MCP servers admin page: register, test, edit and remove upstreams through `applyConfig`, with
 * the real `server-everything` as the upstream (behind a small relay that records the headers it is
 * sent). Header values are credentials: they never appear in a page, in `export`, or in evidence.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { applyConfig, exportConfig, parseConfig } from '../src/services/apply-config.ts';
import { findMcpServerBySlug } from '../src/store/mcp-servers.ts';
import { findWebhookEndpoint } from '../src/store/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import {
  appClient,
  formFields,
  lastEvidence,
  verifiedEvidence,
  type Page,
  type Session,
} from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call } from './support/http.ts';
import {
  type EverythingUpstream,
  freePort,
  startEverything,
  startRecordingUpstream,
} from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: approver@acme.test, name: Avery Approver, role: approver }
  - { email: viewer@acme.test, name: Vic Viewer, role: viewer }
`;

const SECRET = 'Bearer upstream-s3cr3t-7f2a9c';
const TENANT = 'tenant-value-d41d8cd9';
const NEW_SECRET = 'Bearer rotated-token-0b1e55';

const LIST = '/app/admin/mcp-servers';
const ADMIN_GETS = [LIST, `${LIST}/everything`];
const ADMIN_POSTS = [LIST, `${LIST}/everything`, `${LIST}/everything/test`, `${LIST}/everything/delete`];

/** A relay in front of an upstream that keeps the headers of every request it forwards. */
async function startRelay(target: string) {
  const to = new URL(target);
  const seen: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((request, response) => {
    seen.push(request.headers);
    const forward = http.request(
      {
        host: to.hostname,
        port: to.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, host: to.host },
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forward.on('error', () => response.destroy());
    request.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    seen,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let everything: EverythingUpstream;
let relay: Awaited<ReturnType<typeof startRelay>>;

before(async () => {
  everything = await startEverything();
  relay = await startRelay(everything.url);
});
after(async () => {
  await relay?.close();
  await everything?.stop();
});

for (const backend of backends) {
  describe(`the MCP servers page on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let workspace: Workspace;
    let key: string;
    let admin: Session;
    let approver: Session;
    let viewer: Session;
    /** Every page this suite received, to look for credentials in. */
    const pages: string[] = [];

    const onPage = (page: Page) => {
      pages.push(page.text);
    };
    const { get, follow, post, signIn } = appClient(() => t, { onPage });

    const config = () => exportConfig(t.service.ctx, workspace);
    const evidence = () => verifiedEvidence(t, key);
    const lastEntry = () => lastEvidence(t, workspace);
    /** One successful change: a redirect with its notice, and exactly one new `config.applied` entry. */
    async function changed(page: Page, before: number, notice: string) {
      assert.equal(page.status, 303, page.text.slice(0, 3000));
      assert.equal(page.location, LIST);
      assert.equal(page.notice, notice);
      assert.equal(await evidence(), before + 1);
      const entry = await lastEntry();
      assert.equal(entry.type, 'config.applied');
      return entry;
    }
    const storedHeaders = async (slug: string, of = workspace) => {
      const server = await findMcpServerBySlug(t.service.ctx.db, of.id, slug);
      assert.ok(server, `server ${slug} is stored`);
      return JSON.parse(t.service.ctx.sealer.open(server.headersSealed)) as Record<string, string>;
    };
    /** The card of one server in the list page. */
    const card = (text: string, slug: string) => {
      const start = text.indexOf(`id="server-${slug}"`);
      assert.ok(start >= 0, `no card for ${slug}`);
      return text.slice(start, text.indexOf('</section>', start));
    };
    /** tools/list through the proxy, as an agent would: registers the upstream's tools as `new`. */
    async function listThroughProxy(slug: string) {
      const client = new Client({ name: 'test-agent', version: '1' });
      const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/${slug}`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      });
      await client.connect(transport);
      try {
        return (await client.listTools()).tools.map((tool) => tool.name);
      } finally {
        await client.close();
      }
    }

    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      admin = await signIn(workspace, 'admin@acme.test');
      approver = await signIn(workspace, 'approver@acme.test');
      viewer = await signIn(workspace, 'viewer@acme.test');
    });
    after(() => t?.close());

    test('approvers, viewers and signed-out requests are refused on every route', async () => {
      const before = await evidence();
      const exported = await config();
      for (const session of [approver, viewer]) {
        for (const path of ADMIN_GETS) assert.equal((await get(session, path)).status, 403, path);
        for (const path of ADMIN_POSTS) {
          const page = await post(session, path, {
            slug: 'evil',
            name: 'Evil',
            url: everything.url,
            headers: 'X-Evil: 1',
            confirm: 'yes',
          });
          assert.equal(page.status, 403, path);
          assert.match(page.text, /for workspace admins/);
        }
      }
      for (const path of ADMIN_GETS) {
        const page = await get(null, path);
        assert.equal(page.status, 303, path);
        assert.match(page.location ?? '', /^\/app\/login/);
      }
      for (const path of ADMIN_POSTS) {
        assert.equal((await post(null, path, { slug: 'evil' })).status, 401, path);
        // An admin's form without the CSRF token is refused too.
        assert.equal((await post(admin, path, { slug: 'evil' }, null)).status, 403, path);
      }
      assert.deepEqual(await config(), exported);
      assert.equal(await evidence(), before);
      // The nav shows the page to admins only.
      assert.match((await get(admin, '/app/inbox')).text, /href="\/app\/admin\/mcp-servers"/);
      assert.doesNotMatch((await get(approver, '/app/inbox')).text, /mcp-servers/);
    });

    test('register, test, discover tools, edit, clear headers and remove, each change evidenced', async () => {
      let checked = await evidence();
      const empty = await get(admin, '/app/admin/mcp-servers');
      assert.equal(empty.status, 200);
      assert.match(empty.text, /No MCP servers yet/);
      assert.match(empty.text, /aria-current="page"\s*>MCP servers/);

      // Register, with two headers.
      const registered = await post(admin, LIST, {
        slug: 'everything',
        name: 'Everything',
        url: relay.url,
        headers: `Authorization: ${SECRET}\r\nX-Tenant:   ${TENANT}  \r\n\r\n`,
      });
      const entry = await changed(registered, checked++, 'registered');
      assert.deepEqual(entry.data.mcp_servers.declared, [
        {
          slug: 'everything',
          name: 'Everything',
          url: relay.url,
          header_names: ['Authorization', 'X-Tenant'],
        },
      ]);
      assert.ok(
        !entry.text.includes('s3cr3t') && !entry.text.includes(TENANT),
        'evidence names headers only',
      );
      assert.deepEqual(await storedHeaders('everything'), { Authorization: SECRET, 'X-Tenant': TENANT });
      assert.deepEqual((await config()).mcp_servers, [
        { slug: 'everything', name: 'Everything', url: relay.url },
      ]);

      const list = await follow(admin, registered);
      assert.match(list.text, /MCP server registered/);
      const shown = card(list.text, 'everything');
      assert.match(shown, /<h2 id="server-everything-name">Everything<\/h2>/);
      assert.ok(shown.includes(`${t.url}/mcp/everything`), 'the proxy URL');
      assert.ok(shown.includes(relay.url), 'the upstream URL');
      assert.match(shown, /<code>Authorization<\/code>, <code>X-Tenant<\/code>/);
      assert.match(shown, /Discovered tools <span class="badge">0<\/span>/);

      // Test connection: lists the upstream's tools with the stored headers, changes nothing.
      relay.seen.length = 0;
      const tested = await post(admin, `${LIST}/everything/test`, {});
      assert.equal(tested.status, 200);
      const result = tested.text.match(
        /<div class="notice" role="status" id="test-result">([\s\S]*?)<\/div>/,
      )?.[1];
      assert.ok(result, tested.text.slice(0, 3000));
      const count = Number(result.match(/lists (\d+) tools/)?.[1]);
      assert.ok(count > 0, result);
      assert.match(result, /<code>echo<\/code\s*>/);
      assert.ok(relay.seen.length > 0);
      assert.ok(relay.seen.every((h) => h.authorization === SECRET && h['x-tenant'] === TENANT));
      assert.equal(await evidence(), checked);

      // Agents list tools through the proxy: they show up as new, linked to the rules page.
      const listed = await listThroughProxy('everything');
      assert.ok(listed.includes('echo'));
      const discovered = card((await get(admin, '/app/admin/mcp-servers')).text, 'everything');
      assert.match(discovered, new RegExp(`Discovered tools <span class="badge">${count}</span>`));
      assert.match(discovered, /<code>echo<\/code\s*>/);
      // With the upstream's description and when it was first called (listed only: not yet).
      assert.match(discovered, /<code>echo<\/code\s*><br \/><span class="muted">[^<]+<\/span>/);
      assert.match(discovered, /<th>First called<\/th>/);
      assert.match(discovered, /data-label="First called">\s*<span class="muted">not yet<\/span>/);
      assert.match(discovered, /are <em>new<\/em>/);
      assert.match(discovered, /href="\/app\/admin\/rules#classify"/);
      checked = await evidence();
      const classified = await post(admin, '/app/admin/tools', {
        connection: 'Everything',
        tool: 'echo',
        classification: 'allow',
        confirmed: 'yes',
      });
      assert.equal(classified.status, 303);
      checked++;
      const after = card((await get(admin, '/app/admin/mcp-servers')).text, 'everything');
      assert.match(after, /<code>echo<\/code\s*>[\s\S]*?status approved"\s*>allow/);

      // Field errors: a duplicate slug, a header line without a colon, a URL that is not http.
      const duplicate = await post(admin, LIST, {
        slug: 'everything',
        name: 'Other',
        url: relay.url,
        headers: '',
      });
      assert.equal(duplicate.status, 422);
      assert.match(duplicate.text, /id="s-slug-error">Is already registered/);
      const badLine = await post(admin, LIST, {
        slug: 'files',
        name: 'Files',
        url: relay.url,
        headers: `Authorization ${SECRET}`,
      });
      assert.equal(badLine.status, 422);
      assert.match(badLine.text, /id="s-headers-error">Line 1: write each header as Name: value/);
      assert.match(
        badLine.text,
        /name="slug"[^>]*value="files"/s,
        'what was typed comes back, headers aside',
      );
      const badUrl = await post(admin, LIST, {
        slug: 'files',
        name: 'Files',
        url: 'ftp://files.example/mcp',
        headers: `Authorization: ${NEW_SECRET}`,
      });
      assert.equal(badUrl.status, 422);
      assert.match(badUrl.text, /id="s-url-error">must be an http or https URL/);
      assert.match(
        badUrl.text,
        /id="s-headers-error">Type the headers again: their values are never sent back/,
      );
      const sameName = await post(admin, LIST, {
        slug: 'files',
        name: 'Everything',
        url: relay.url,
        headers: '',
      });
      assert.equal(sameName.status, 422);
      assert.match(sameName.text, /id="s-name-error">Is the name of server “everything”/);
      assert.equal(await evidence(), checked);

      // Edit with the headers box empty: the stored headers stay.
      const form = await get(admin, `${LIST}/everything`);
      assert.equal(form.status, 200);
      const bookmarked = await get(admin, `${LIST}/edit?slug=everything`);
      assert.equal(bookmarked.status, 301);
      assert.equal(bookmarked.location, `${LIST}/everything`);
      assert.match(form.text, /name="name"[^>]*value="Everything"/s);
      assert.match(form.text, /<textarea[^>]*name="headers"[^>]*><\/textarea>/s);
      assert.match(form.text, /name="clear_headers"/);
      assert.match(form.text, /Stored now:\s*<code>Authorization<\/code>, <code>X-Tenant<\/code>/);
      const edited = await post(admin, `${LIST}/everything`, {
        name: 'Everything',
        url: relay.url.replace('/mcp', '/mcp?via=relay'),
        headers: '',
      });
      const editEntry = await changed(edited, checked++, 'updated');
      assert.equal(editEntry.data.mcp_servers.declared[0].header_names, undefined);
      assert.deepEqual(await storedHeaders('everything'), { Authorization: SECRET, 'X-Tenant': TENANT });
      relay.seen.length = 0;
      const again = await post(admin, `${LIST}/everything/test`, {});
      assert.match(again.text, /<strong>Connected\.<\/strong>/);
      assert.ok(relay.seen.length > 0 && relay.seen.every((h) => h.authorization === SECRET));

      // Typed headers replace the stored ones.
      const rotated = await post(admin, `${LIST}/everything`, {
        name: 'Everything',
        url: relay.url,
        headers: `Authorization: ${NEW_SECRET}`,
      });
      await changed(rotated, checked++, 'updated');
      assert.deepEqual(await storedHeaders('everything'), { Authorization: NEW_SECRET });
      assert.match(
        card((await get(admin, '/app/admin/mcp-servers')).text, 'everything'),
        /<code>Authorization<\/code>\s*</,
      );

      // A second server; re-applying it leaves the first one's headers alone.
      const second = await post(admin, LIST, {
        slug: 'dead',
        name: 'Nothing listens',
        url: `http://127.0.0.1:${await freePort()}/mcp`,
        headers: '',
      });
      await changed(second, checked++, 'registered');
      assert.deepEqual(await storedHeaders('everything'), { Authorization: NEW_SECRET });
      assert.deepEqual(await storedHeaders('dead'), {});

      // A URL where nothing listens: a clear failure.
      const failed = await post(admin, `${LIST}/dead/test`, {});
      assert.equal(failed.status, 200);
      const failure = card(failed.text, 'dead');
      assert.match(failure, /role="alert" id="test-result"/);
      assert.match(
        failure,
        /Connection failed\.<\/strong> The upstream MCP server cannot be reached: nothing is listening at that address \(connection refused\)\./,
      );
      assert.doesNotMatch(card(failed.text, 'everything'), /test-result/);
      assert.equal(await evidence(), checked);

      // Clearing the headers.
      const cleared = await post(admin, `${LIST}/everything`, {
        name: 'Everything',
        url: relay.url,
        headers: '',
        clear_headers: 'yes',
      });
      const clearEntry = await changed(cleared, checked++, 'updated');
      assert.deepEqual(
        clearEntry.data.mcp_servers.declared.find((s: { slug: string }) => s.slug === 'everything')
          .header_names,
        [],
      );
      assert.deepEqual(await storedHeaders('everything'), {});
      assert.match(
        card((await get(admin, '/app/admin/mcp-servers')).text, 'everything'),
        /Headers<\/dt>\s*<dd>\s*<span class="muted">none/,
      );
      // The proxy's own connection, opened with the old headers, may still be answering the upstream's
      // requests to it (roots, sampling): a call through the proxy makes it reconnect without them.
      await listThroughProxy('everything');
      relay.seen.length = 0;
      await post(admin, `${LIST}/everything/test`, {});
      assert.ok(relay.seen.length > 0 && relay.seen.every((h) => h.authorization === undefined));

      // Removing asks first; the first step changes nothing.
      const asked = await post(admin, `${LIST}/dead/delete`, {});
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Remove this MCP server\?/);
      assert.match(asked.text, /name="confirm" value="yes"/);
      assert.equal((await config()).mcp_servers!.length, 2);
      assert.equal(await evidence(), checked);
      const removed = await post(admin, `${LIST}/dead/delete`, { confirm: 'yes' });
      const removeEntry = await changed(removed, checked, 'removed');
      assert.deepEqual(removeEntry.data.mcp_servers.removed, ['dead']);
      assert.deepEqual((await config()).mcp_servers, [
        { slug: 'everything', name: 'Everything', url: relay.url },
      ]);
      assert.match((await follow(admin, removed)).text, /MCP server removed/);
      assert.equal((await get(admin, `${LIST}/dead`)).status, 404);
      assert.equal((await post(admin, `${LIST}/dead/test`, {})).status, 404);

      // Registering a removed slug again does not bring its old headers back.
      await post(admin, `${LIST}/everything`, {
        name: 'Everything',
        url: relay.url,
        headers: `Authorization: ${SECRET}`,
      });
      await post(admin, `${LIST}/everything/delete`, { confirm: 'yes' });
      checked = await evidence();
      const back = await post(admin, LIST, {
        slug: 'everything',
        name: 'Everything',
        url: relay.url,
        headers: '',
      });
      await changed(back, checked, 'registered');
      assert.deepEqual(await storedHeaders('everything'), {});

      // No header value anywhere: pages, export, evidence.
      const exported = JSON.stringify(await config());
      const entries = await t.service.ctx.db.all<{ data: string }>(
        'SELECT data FROM evidence WHERE workspace_id = $1',
        [workspace.id],
      );
      for (const secret of [SECRET, 'upstream-s3cr3t', TENANT, NEW_SECRET, 'rotated-token']) {
        assert.ok(!exported.includes(secret), `export shows ${secret}`);
        assert.ok(!entries.some((e) => e.data.includes(secret)), `evidence shows ${secret}`);
        const leaked = pages.findIndex((text) => text.includes(secret));
        assert.equal(leaked, -1, `a page shows ${secret}: ${pages[leaked]?.slice(0, 500)}`);
      }
    });

    test('an upstream that refuses the credentials: a clear failure that never repeats them', async () => {
      // Answers 401 and echoes what it was sent, as a careless server might.
      const refusing = http.createServer((request, response) => {
        request.resume();
        response
          .writeHead(401, { 'content-type': 'text/plain' })
          .end(`invalid credentials: ${request.headers.authorization}`);
      });
      await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
      const { port } = refusing.address() as net.AddressInfo;
      try {
        const saved = await post(admin, LIST, {
          slug: 'refusing',
          name: 'Refusing',
          url: `http://127.0.0.1:${port}/mcp`,
          headers: `Authorization: ${SECRET}`,
        });
        assert.equal(saved.status, 303, saved.text.slice(0, 2000));
        const tested = await post(admin, `${LIST}/refusing/test`, {});
        assert.equal(tested.status, 200);
        assert.match(
          card(tested.text, 'refusing'),
          /Connection failed\.<\/strong> The upstream MCP server cannot be reached: it refused the request \(HTTP 401 Unauthorized\): check the headers\./,
        );
        assert.ok(!tested.text.includes('upstream-s3cr3t'));
        assert.ok(!tested.text.includes('invalid credentials'));
        const removed = await post(admin, `${LIST}/refusing/delete`, { confirm: 'yes' });
        assert.equal(removed.status, 303);
      } finally {
        refusing.closeAllConnections();
        await new Promise<void>((resolve) => refusing.close(() => resolve()));
      }
    });

    test('a URL moved to another origin leaves the stored headers behind unless they are given again', async () => {
      // Two receivers on loopback that record the headers each request brought.
      const first = await startRecordingUpstream();
      const second = await startRecordingUpstream();
      const save = (fields: Record<string, string>) =>
        post(admin, `${LIST}/moving`, {
          name: 'Moving',
          ...fields,
        });
      /** Test connection, and the Authorization header of every request the receiver got for it. */
      const tested = async (receiver: typeof first) => {
        receiver.requests.length = 0;
        const page = await post(admin, `${LIST}/moving/test`, {});
        assert.match(card(page.text, 'moving'), /<strong>Connected\.<\/strong>/);
        assert.ok(receiver.requests.length > 0);
        return [...new Set(receiver.requests.map((request) => request.headers.authorization))];
      };
      try {
        const registered = await post(admin, LIST, {
          slug: 'moving',
          name: 'Moving',
          url: first.url,
          headers: `Authorization: ${SECRET}`,
        });
        assert.equal(registered.status, 303, registered.text.slice(0, 2000));
        assert.deepEqual(await tested(first), [SECRET]);

        // The form says so beside the URL field.
        const form = await get(admin, `${LIST}/moving`);
        assert.match(
          form.text,
          /name="url"[^>]*\/>\s*<p class="muted" id="s-url-note"[^>]*>\s*A URL on another origin[^<]*drops the\s+stored headers/,
        );

        // The app: another origin with the headers box empty sends no headers there.
        let checked = await evidence();
        const moved = await save({ url: second.url, headers: '' });
        const entry = await changed(moved, checked, 'updated');
        const declared = entry.data.mcp_servers.declared.find((s: { slug: string }) => s.slug === 'moving');
        assert.deepEqual(declared.header_names, [], 'the evidence says no headers go upstream now');
        assert.deepEqual(await storedHeaders('moving'), {});
        assert.deepEqual(await tested(second), [undefined]);

        // Given again in the same change, they go along.
        checked = await evidence();
        await changed(
          await save({ url: first.url, headers: `Authorization: ${NEW_SECRET}` }),
          checked,
          'updated',
        );
        assert.deepEqual(await tested(first), [NEW_SECRET]);

        // `apply`: the same rules, for a file without headers and for one with them.
        const applyMoving = async (server: Record<string, unknown>) => {
          const others = ((await config()).mcp_servers ?? []).filter((s) => s.slug !== 'moving');
          const file = { mcp_servers: [...others, { slug: 'moving', name: 'Moving', ...server }] };
          await applyConfig(t.service.ctx, workspace, parseConfig(JSON.stringify(file)));
        };
        await applyMoving({ url: first.url.replace('/mcp', '/other') });
        assert.deepEqual(await storedHeaders('moving'), { Authorization: NEW_SECRET }, 'same origin: kept');
        await applyMoving({ url: second.url });
        assert.deepEqual(await storedHeaders('moving'), {});
        assert.deepEqual(await tested(second), [undefined]);
        await applyMoving({ url: first.url, headers: { Authorization: SECRET } });
        await applyMoving({ url: second.url, headers: { Authorization: NEW_SECRET } });
        assert.deepEqual(await tested(second), [NEW_SECRET]);
      } finally {
        await post(admin, `${LIST}/moving/delete`, { confirm: 'yes' });
        await Promise.all([first.close(), second.close()]);
      }
    });

    test('every MCP server and webhook field, saved unchanged through the forms, exports the same', async () => {
      const file = `${WORKSPACE}tools:
  - { connection: Files, tool: read, classification: allow }
oauth: { grant_role: approver }
webhook: { url: "${relay.url.replace('/mcp', '/hook')}" }
mcp_servers:
  - { slug: files, name: Files, url: "${relay.url}", headers: { Authorization: "${SECRET}", X-Tenant: "${TENANT}" }, call_timeout_seconds: 45 }
  - { slug: plain, name: Plain, url: "${everything.url}" }
`;
      const { workspace: saved } = await t.workspace({ config: file });
      const session = await signIn(saved, 'admin@acme.test');
      const exported = () => exportConfig(t.service.ctx, saved);
      const secretOf = async () => (await findWebhookEndpoint(t.service.ctx.db, saved.id))?.secretSealed;
      const before = await exported();
      assert.equal(before.mcp_servers?.[0]?.call_timeout_seconds, 45);
      assert.ok(before.webhook?.url);
      const secret = await secretOf();

      // What a browser sends for each form as the page shows it, with nothing typed.
      for (const path of [`${LIST}/files`, `${LIST}/plain`, '/app/admin/webhook']) {
        const form = await get(session, path);
        const answer = await post(session, path, formFields(form.text, path));
        assert.equal(answer.status, 303, `${path}: ${answer.text.slice(0, 2000)}`);
      }
      assert.deepEqual(await exported(), before);
      assert.deepEqual(await storedHeaders('files', saved), { Authorization: SECRET, 'X-Tenant': TENANT });
      assert.deepEqual(await storedHeaders('plain', saved), {});
      assert.equal(await secretOf(), secret, 'the webhook keeps its secret');
    });

    test('without ALLOW_PRIVATE_TARGETS a loopback URL is refused next to the field', async () => {
      const strict = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'false' } });
      try {
        const other = await strict.workspace({ config: WORKSPACE });
        const client = appClient(strict, { onPage });
        const session = await client.signIn(other.workspace, 'admin@acme.test');
        const verify = async () =>
          (await call(strict.url, 'GET', '/api/v1/audit/verify', { key: other.key })).body.checked as number;
        const before = await verify();
        const refused = await client.post(session, LIST, {
          slug: 'local',
          name: 'Local',
          url: everything.url,
          headers: `Authorization: ${SECRET}`,
        });
        assert.equal(refused.status, 422);
        assert.match(refused.text, /Nothing was changed/);
        assert.match(
          refused.text,
          /id="s-url-error">resolves to an internal address \(loopback, private or link-local; see ALLOW_PRIVATE_TARGETS\)/,
        );
        assert.match(refused.text, /name="url"[^>]*value="http:\/\/127\.0\.0\.1:\d+\/mcp"/s);
        assert.ok(!refused.text.includes(SECRET));
        assert.equal((await exportConfig(strict.service.ctx, other.workspace)).mcp_servers!.length, 0);
        assert.equal(await verify(), before);
      } finally {
        await strict.close();
      }
    });
  });
}
