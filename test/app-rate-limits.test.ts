/**
 * Issue 20: the signed-in app and the widget API have quotas of their own, per member (APP_RATE_LIMIT,
 * WIDGET_RATE_LIMIT), counted through the same RateCounter as the Core API (so across instances on
 * PostgreSQL) and apart from the workspace's API buckets. The limits are small here so that a test
 * reaches them in a few requests; the test clock moves windows on, nothing waits.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, type Session } from './support/app-client.ts';
import { backends, sqlite } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';

const APP_LIMIT = 8;
const WIDGET_LIMIT = 5;
const UNKNOWN_HOLD = `svc_pa_${'A'.repeat(22)}`;
const randomToken = () => randomBytes(32).toString('base64url');

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: bob@acme.test, name: Bob, role: admin }
`;

for (const backend of backends) {
  describe(`app and widget rate limits on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    const client = appClient(() => t);
    before(async () => {
      t = await startTestService(backend, {
        env: { APP_RATE_LIMIT: String(APP_LIMIT), WIDGET_RATE_LIMIT: String(WIDGET_LIMIT) },
      });
    });
    after(() => t?.close());

    /** Moves the clock to the start of a fresh window: every request of a test falls into one. */
    const freshWindow = () => t.clock.advance(60_000 - (t.clock.now() % 60_000));

    /** A GET as the member, with the answer's headers (the app client keeps only the status and text). */
    async function page(session: Session, path: string) {
      const response = await fetch(t.url + path, {
        headers: { cookie: `approvals_session=${session.cookie}` },
        redirect: 'manual',
      });
      return { status: response.status, headers: response.headers, text: await response.text() };
    }

    const widget = (token: string, path = '/widget/api/holds', body?: unknown) =>
      call(t.url, body === undefined ? 'GET' : 'POST', path, {
        key: token,
        body,
        headers: { origin: 'https://tool.example' },
      });

    async function twoMembers(): Promise<{ workspace: Workspace; key: string }> {
      return t.workspace({ config: CONFIG });
    }

    test('a member over the app quota gets a 429 page with Retry-After; another member and the API are not affected', async () => {
      const { workspace, key } = await twoMembers();
      freshWindow();
      const admin = await client.signIn(workspace, 'admin@acme.test'); // counts one page (the inbox)
      const bob = await client.signIn(workspace, 'bob@acme.test');

      const first = await page(admin, '/app/inbox');
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('ratelimit-limit'), String(APP_LIMIT));
      assert.equal(first.headers.get('ratelimit-remaining'), String(APP_LIMIT - 2));
      const statuses = [];
      for (let i = 0; i < APP_LIMIT - 2; i++) statuses.push((await page(admin, '/app/inbox')).status);
      assert.deepEqual(statuses, Array(APP_LIMIT - 2).fill(200));

      const over = await page(admin, '/app/inbox');
      assert.equal(over.status, 429);
      const retryAfter = Number(over.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(over.headers.get('ratelimit-remaining'), '0');
      // A page in the app's style, with its security headers, still naming who is signed in.
      assert.match(over.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(over.headers.get('content-security-policy') ?? '', /script-src 'self'/);
      assert.match(over.text, /<h1>Too many requests<\/h1>/);
      assert.match(over.text, /Admin/);

      // Form posts are refused before their handler: the sign-out did not happen.
      const post = await client.post(admin, '/app/logout', {});
      assert.equal(post.status, 429);
      // The live-events stream: a plain 429.
      const events = await page(admin, '/app/events');
      assert.equal(events.status, 429);
      assert.match(events.headers.get('content-type') ?? '', /^text\/plain/);
      assert.ok(Number(events.headers.get('retry-after')) >= 1);
      assert.equal(events.text, 'Too many requests');

      // Another member of the same workspace has a quota of their own.
      const other = await page(bob, '/app/inbox');
      assert.equal(other.status, 200);
      assert.equal(other.headers.get('ratelimit-remaining'), String(APP_LIMIT - 2));

      // The agents' Core API quota is not consumed by pages, and the API does not consume the pages'.
      const api = await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });
      assert.equal(api.status, 404);
      assert.equal(api.headers.get('ratelimit-limit'), '120');
      assert.equal(api.headers.get('ratelimit-remaining'), '119');
      for (let i = 0; i < 5; i++) await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });
      const afterApi = await page(bob, '/app/inbox');
      assert.equal(afterApi.headers.get('ratelimit-remaining'), String(APP_LIMIT - 3));

      // The next window lets the member in again; the session survived the refused sign-out.
      t.clock.advance(60_000);
      const again = await page(admin, '/app/inbox');
      assert.equal(again.status, 200);
      assert.equal(again.headers.get('ratelimit-remaining'), String(APP_LIMIT - 1));
    });

    test('static files and the favicon are not counted; opening the live-events stream is', async () => {
      const { workspace } = await twoMembers();
      freshWindow();
      const admin = await client.signIn(workspace, 'admin@acme.test');
      const before = await page(admin, '/app/inbox');
      const remaining = Number(before.headers.get('ratelimit-remaining'));
      assert.equal(remaining, APP_LIMIT - 2);

      for (let i = 0; i < APP_LIMIT + 2; i++) {
        assert.equal((await page(admin, '/app/static/app.css')).status, 200);
        assert.equal((await page(admin, '/app/static/app.js')).status, 200);
        assert.equal((await page(admin, '/favicon.ico')).status, 204);
      }
      const afterStatic = await page(admin, '/app/inbox');
      assert.equal(afterStatic.status, 200);
      assert.equal(afterStatic.headers.get('ratelimit-remaining'), String(remaining - 1));

      // The stream is opened (200, an event stream), then closed by the client.
      const abort = new AbortController();
      const stream = await fetch(`${t.url}/app/events`, {
        headers: { cookie: `approvals_session=${admin.cookie}` },
        signal: abort.signal,
      });
      assert.equal(stream.status, 200);
      assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
      abort.abort();
      const afterStream = await page(admin, '/app/inbox');
      assert.equal(afterStream.headers.get('ratelimit-remaining'), String(remaining - 3));
    });

    test('the widget API answers 429 rate_limited in JSON with CORS over the member quota, whichever token; then recovers', async () => {
      const { workspace, key } = await twoMembers();
      const { db } = t.service.ctx;
      const admin = (await findMemberByEmail(db, workspace.id, 'admin@acme.test'))!;
      const bob = (await findMemberByEmail(db, workspace.id, 'bob@acme.test'))!;
      const first = await mintEmbedToken(t.service.ctx, admin);
      const second = await mintEmbedToken(t.service.ctx, admin);
      const bobs = await mintEmbedToken(t.service.ctx, bob);
      // A hold waiting for the admins (an unclassified tool is held, fail-closed).
      const held = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
      assert.equal(held.status, 201);
      assert.equal(held.body.status, 'pending');
      freshWindow();

      const statuses = [];
      for (let i = 0; i < WIDGET_LIMIT; i++) {
        const answer = await widget(i % 2 === 0 ? first.token : second.token);
        statuses.push(answer.status);
        assert.equal(answer.headers.get('ratelimit-remaining'), String(WIDGET_LIMIT - 1 - i));
      }
      assert.deepEqual(statuses, Array(WIDGET_LIMIT).fill(200));

      // Over the quota, with either of the member's tokens: the contract's error, CORS kept.
      for (const token of [first.token, second.token]) {
        const over = await widget(token);
        assert.equal(over.status, 429);
        assert.deepEqual(over.body, { error: 'rate_limited' });
        assert.match(over.headers.get('content-type') ?? '', /^application\/json/);
        assert.ok(Number(over.headers.get('retry-after')) >= 1);
        assert.equal(over.headers.get('ratelimit-limit'), String(WIDGET_LIMIT));
        assert.equal(over.headers.get('ratelimit-remaining'), '0');
        assert.equal(over.headers.get('access-control-allow-origin'), '*');
        assert.match(over.headers.get('access-control-expose-headers') ?? '', /Retry-After/);
      }
      // A decision over quota is refused before it is made.
      const decision = await widget(first.token, `/widget/api/holds/${held.body.id}/decision`, {
        verdict: 'approve',
      });
      assert.equal(decision.status, 429);
      assert.deepEqual(decision.body, { error: 'rate_limited' });
      const still = await call(t.url, 'GET', `/api/v1/holds/${held.body.id}`, { key });
      assert.equal(still.body.status, 'pending');

      // Another member's widget, the member's own app pages and the API keep their quotas.
      assert.equal((await widget(bobs.token)).status, 200);
      const session = await client.signIn(workspace, 'admin@acme.test');
      assert.equal((await page(session, '/app/inbox')).status, 200);
      const api = await call(t.url, 'GET', `/api/v1/holds/${UNKNOWN_HOLD}`, { key });
      assert.equal(api.headers.get('ratelimit-remaining'), '118'); // the read above, and this one

      // The next window: the widget answers again and the decision goes through.
      t.clock.advance(60_000);
      assert.equal((await widget(second.token)).status, 200);
      const decided = await widget(first.token, `/widget/api/holds/${held.body.id}/decision`, {
        verdict: 'approve',
      });
      assert.equal(decided.status, 200, decided.text);
      const approved = await call(t.url, 'GET', `/api/v1/holds/${held.body.id}`, { key });
      assert.equal(approved.body.status, 'approved');
    });
  });
}

describe('APP_RATE_LIMIT and WIDGET_RATE_LIMIT', { skip: sqlite.skip }, () => {
  test('default to 600 and 300 a minute; whole numbers only; 0 turns a limit off', async () => {
    const defaults = loadConfig({ APP_RATE_LIMIT: '', WIDGET_RATE_LIMIT: '' });
    assert.equal(defaults.appRateLimit, 600);
    assert.equal(defaults.widgetRateLimit, 300);
    for (const value of ['-1', '1.5', 'many']) {
      assert.throws(() => loadConfig({ APP_RATE_LIMIT: value }), /APP_RATE_LIMIT/);
      assert.throws(() => loadConfig({ WIDGET_RATE_LIMIT: value }), /WIDGET_RATE_LIMIT/);
    }

    const t = await startTestService(sqlite, { env: { APP_RATE_LIMIT: '0', WIDGET_RATE_LIMIT: '0' } });
    try {
      const { workspace } = await t.workspace();
      const session = await appClient(t).signIn(workspace, 'admin@acme.test');
      const admin = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, admin);
      t.clock.advance(60_000 - (t.clock.now() % 60_000));
      for (let i = 0; i < 10; i++) {
        const answer = await fetch(`${t.url}/app/inbox`, {
          headers: { cookie: `approvals_session=${session.cookie}` },
          redirect: 'manual',
        });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('ratelimit-limit'), null, 'not counted');
        assert.equal((await call(t.url, 'GET', '/widget/api/holds', { key: token })).status, 200);
      }
    } finally {
      await t.close();
    }
  });
});

/**
 * Issue 39: approvers behind one address (an office network) are not throttled. Only failed guesses at
 * a secret (unknown decision-link tokens, bad sign-in links, failed passkey sign-ins) count against the 20 a minute per
 * address; while an address is over, every link from it is refused, valid or not, so a guesser cannot
 * tell a good token by its answer.
 */
async function guessesOnly(t: TestService) {
  const { workspace, key } = await t.workspace();
  const { ctx } = t.service;
  const admin = (await findMemberByEmail(ctx.db, workspace.id, 'admin@acme.test'))!;
  const send = async (method: 'GET' | 'POST', path: string, form?: Record<string, string>) => {
    const answer = await fetch(t.url + path, {
      method,
      redirect: 'manual',
      ...(form && {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      }),
    });
    return { status: answer.status, headers: answer.headers, text: await answer.text() };
  };
  const pendingLink = async () => {
    const held = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission() });
    assert.equal(held.body.status, 'pending', held.text);
    const hold = (await findHold(ctx.db, workspace.id, held.body.id))!;
    const url = await mintDecisionLink(ctx, { hold, memberId: admin.id, channel: 'email' });
    return { id: hold.id, path: new URL(url).pathname };
  };
  const links = [];
  for (let i = 0; i < 30; i++) links.push(await pendingLink());
  const spare = await pendingLink();
  const signInPaths = [];
  for (let i = 0; i < 15; i++)
    signInPaths.push(new URL((await inviteLink(ctx, workspace, 'admin@acme.test')).url).pathname);
  t.clock.advance(60_000 - (t.clock.now() % 60_000));

  // 30 decisions (each opened, then decided) and 15 sign-ins (each opened, then used) within a minute.
  const statuses = [];
  for (const { path } of links) {
    statuses.push(
      (await send('GET', path)).status,
      (await send('POST', path, { verdict: 'approve' })).status,
    );
  }
  for (const path of signInPaths)
    statuses.push((await send('GET', path)).status, (await send('POST', path)).status);
  // Asking to sign in with a passkey is not a guess (409 here: passkeys need a PUBLIC_URL with a host
  // name, which this service has not; the limit comes first).
  for (let i = 0; i < 25; i++) statuses.push((await send('POST', '/app/login/passkey/options')).status);
  assert.deepEqual(statuses, [
    ...Array(60).fill(200),
    ...Array(15).fill([200, 303]).flat(),
    ...Array(25).fill(409),
  ]);
  for (const { id } of links)
    assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status, 'approved');

  // Guessing is still stopped: 20 failed guesses (decision links and sign-in links alike), then 429.
  const guesses = [];
  for (let i = 0; i < 10; i++) guesses.push((await send('GET', `/d/${randomToken()}`)).status);
  for (let i = 0; i < 5; i++)
    guesses.push((await send('POST', `/d/${randomToken()}`, { verdict: 'approve' })).status);
  for (let i = 0; i < 3; i++) guesses.push((await send('POST', `/app/login/${randomToken()}`)).status);
  const passkey = { ceremony: randomToken(), response: JSON.stringify({ id: randomToken() }) };
  for (let i = 0; i < 2; i++) guesses.push((await send('POST', '/app/login/passkey', passkey)).status);
  assert.deepEqual(guesses, [...Array(15).fill(404), ...Array(3).fill(410), ...Array(2).fill(401)]);
  const over = await send('GET', `/d/${randomToken()}`);
  assert.equal(over.status, 429);
  assert.ok(Number(over.headers.get('retry-after')) >= 1, 'Retry-After');
  assert.match(over.text, /<h1>Too many requests<\/h1>/);
  // While the address is over, a valid link is refused too, and nothing is decided.
  assert.equal((await send('POST', spare.path, { verdict: 'approve' })).status, 429);
  assert.equal((await call(t.url, 'GET', `/api/v1/holds/${spare.id}`, { key })).body.status, 'pending');
  // The next window lets it through.
  t.clock.advance(60_000);
  assert.equal((await send('POST', spare.path, { verdict: 'approve' })).status, 200);
}

for (const backend of backends) {
  describe(`link guesses per address on ${backend.name}`, { skip: backend.skip }, () => {
    test('valid decision links and sign-ins from one address are not counted; failed guesses are', async () => {
      const t = await startTestService(backend);
      try {
        await guessesOnly(t);
      } finally {
        await t.close();
      }
    });
  });
}

const redisUrl = process.env.TEST_REDIS_URL;

describe(
  'link guesses counted in Redis',
  { skip: redisUrl ? undefined : 'TEST_REDIS_URL is not set' },
  () => {
    test('valid decision links and sign-ins from one address are not counted; failed guesses are', async () => {
      const t = await startTestService(sqlite, { env: { REDIS_URL: redisUrl! } });
      try {
        await guessesOnly(t);
      } finally {
        await t.close();
      }
    });
  },
);
