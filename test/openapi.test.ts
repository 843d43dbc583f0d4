/**
 * The OpenAPI document (src/http/openapi.ts) and the routes the server registers agree both ways, on
 * every path outside the surfaces it leaves out; its examples pass the schemas they illustrate.
 */
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { after, before, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CORE_API } from '../src/http/core-api.ts';
import { openApiDocument } from '../src/http/openapi.ts';
import * as schemas from '../src/http/schemas.ts';
import { sqlite } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

/**
 * The surfaces the document leaves out, each documented elsewhere. Every other route must be in it:
 * today the Core API (/api/v1), the public status page (/a/) and the audit key (/.well-known/).
 */
const UNDOCUMENTED = [
  ...['/healthz', '/readyz', '/metrics'], // operations (docs/operations.md)
  '/mcp/', // the MCP proxy, which speaks MCP (docs/mcp.md)
  ...['/app', '/favicon.ico', '/d/'], // pages for people: the app and decision links (docs/app.md)
  ...['/widget.js', '/widget/api/'], // the widget and its API for embed tokens (docs/channels.md)
  ...['/slack/', '/teams/', '/sms/'], // the providers' callbacks (docs/channels.md)
  '/docs', // the documentation, this document included
  // the OAuth authorization server of the MCP servers, and their metadata (docs/mcp.md, OAuth)
  ...['/oauth/', '/.well-known/oauth-', '/.well-known/openid-configuration'],
];
// `/` too: it leads to the app (docs/operations.md), and as a prefix it would leave out every route.
const documentedSurface = (url: string) =>
  url !== '/' && !UNDOCUMENTED.some((prefix) => url.startsWith(prefix));

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** `/api/v1/holds/:id` as OpenAPI writes it. */
const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

/** Every route as registered, in order: Fastify's own HEAD routes and server.ts's 405 answers too. */
const routes: { url: string; methods: string[] }[] = [];
let t: TestService;
let key: string;

before(async () => {
  // buildWebServer adds routes as soon as it has its instance; Fastify announces the instance on this
  // channel first (a documented hook), so the hook below sees every route.
  const collect = (message: unknown) => {
    unsubscribe('fastify.initialization', collect);
    (message as { fastify: FastifyInstance }).fastify.addHook('onRoute', (route) => {
      routes.push({ url: route.url, methods: [route.method].flat() });
    });
  };
  subscribe('fastify.initialization', collect);
  t = await startTestService(sqlite);
  ({ key } = await t.workspace());
});
after(() => t?.close());

/**
 * `METHOD /path` of the routes that are operations: one method each (Fastify adds a HEAD route of its
 * own to each GET). server.ts answers the other methods of a path with 405 through one route for all of
 * them: those come back apart.
 */
function registered() {
  const operations = new Set<string>();
  const others: { url: string; methods: string[] }[] = [];
  for (const { url, methods } of routes) {
    const named = methods.filter((method) => method !== 'HEAD');
    if (named.length === 1) operations.add(`${named[0]} ${openApiPath(url)}`);
    else if (named.length > 1) others.push({ url, methods: named });
  }
  return { operations, others };
}

function documented() {
  const { paths } = openApiDocument('https://approvals.example.com');
  return new Set(
    Object.entries(paths).flatMap(([path, item]) =>
      Object.keys(item)
        .filter((method) => OPERATION_METHODS.includes(method))
        .map((method) => `${method.toUpperCase()} ${path}`),
    ),
  );
}

test('every route registered outside the undocumented surfaces is in the document', () => {
  const inDocument = documented();
  const missing = [...registered().operations].filter(
    (operation) => documentedSurface(operation.split(' ')[1]!) && !inDocument.has(operation),
  );
  assert.deepEqual(missing, [], 'registered, not in the OpenAPI document');
});

test('every operation of the document is a registered route', () => {
  const { operations } = registered();
  const unknown = [...documented()].filter((operation) => !operations.has(operation));
  assert.deepEqual(unknown, [], 'in the OpenAPI document, not registered');
});

test('the other routes on those paths answer 405: no operation hides among them', async () => {
  const answers = registered().others.filter(({ url }) => documentedSurface(url));
  assert.ok(answers.length > 0);
  for (const { url, methods } of answers) {
    const path = url.replace(/:\w+/g, 'svc_pa_bSQ2ElPWXyPoVrXzCE8-Vw');
    for (const method of methods) {
      const answer = await call(t.url, method, path, { key });
      assert.equal(answer.status, 405, `${method} ${url}`);
      assert.equal(answer.body.error, 'method_not_allowed');
    }
  }
});

test('the document is served at /docs/openapi.json', async () => {
  const served = await call(t.url, 'GET', '/docs/openapi.json');
  assert.equal(served.status, 200);
  assert.deepEqual(served.body, JSON.parse(JSON.stringify(openApiDocument(t.service.ctx.publicUrl))));
});

test('every example passes the schema it illustrates', () => {
  let examples = 0;
  for (const [name, schema] of Object.entries(schemas)) {
    if (!(schema instanceof z.ZodType)) continue;
    for (const example of (z.globalRegistry.get(schema)?.examples as unknown[] | undefined) ?? []) {
      examples += 1;
      const parsed = schema.safeParse(example);
      assert.ok(parsed.success, `${name}: ${parsed.error?.message}`);
    }
  }
  assert.ok(examples >= 8);
});

/** The JSON schema the route table gives an operation's answer with this status. */
function answerSchema(method: string, url: string, status: number): z.ZodType {
  const answer = CORE_API.find((route) => route.method === method && route.url === url)?.answers[status];
  assert.ok(answer && typeof answer !== 'string' && answer.schema, `${method} ${url}: no ${status} schema`);
  return answer.schema;
}

test("the answers of a hold's life pass the schemas the route table types them with", async () => {
  const { workspace, key: own } = await t.workspace();
  const check = async (method: string, url: string, path = url, body?: unknown) => {
    const answer = await call(t.url, method, path, { key: own, body });
    const parsed = answerSchema(method, url, answer.status).safeParse(answer.body);
    assert.ok(parsed.success, `${method} ${path} ${answer.status}: ${parsed.error?.message}`);
    return answer.body;
  };
  const sent = submission();
  const created = await check('POST', '/api/v1/holds', undefined, sent);
  await check('POST', '/api/v1/holds', undefined, sent); // the replay, 200
  assert.equal(created.status, 'pending');
  await decideAs(t, workspace.id, created.id, 'approve');
  const hold = await check('GET', '/api/v1/holds/:id', `/api/v1/holds/${created.id}`);
  assert.equal(hold.decision.channel, 'inbox');
  await check('POST', '/api/v1/holds/:id/wait', `/api/v1/holds/${created.id}/wait`, { timeout_seconds: 1 });
  await check('GET', '/api/v1/audit/verify');
  await check('GET', '/api/v1/audit/checkpoints');
  await check('GET', '/.well-known/approvals-audit-key');
});
