/**
 * The app's defences over plain HTTP (no browser): CSRF tokens and Origin checks, roles and
 * approvers, keys and sessions kept apart, cookie flags, sign-out, session fixation, brute force.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, beforeEach, describe, test } from 'node:test';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { mintEmbedToken } from '../src/services/channel-decisions.ts';
import { mintDecisionLink } from '../src/services/decision-links.ts';
import { sha256Hex } from '../src/services/hashing.ts';
import { inviteLink } from '../src/services/sign-in.ts';
import { findHold } from '../src/store/holds.ts';
import { findMemberByEmail } from '../src/store/members.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { startTestService, type TestService } from './support/service.ts';
import { type Mail, startSmtp } from './support/smtp.ts';
import { startTcpProxy } from './support/tcp-proxy.ts';
import { until } from './support/wait.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: second@acme.test, name: Second, role: admin }
  - { email: bob@acme.test, name: Bob, role: approver }
  - { email: carol@acme.test, name: Carol, role: approver }
  - { email: vic@acme.test, name: Vic, role: viewer }
tools:
  - { connection: SDK, tool: send_invoice, classification: approval }
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Bob pays, tool: pay, effect: approval, approvers: [bob@acme.test] }
`;

const COOKIE = 'approvals_session';

interface Page {
  status: number;
  location: string | null;
  setCookie: string | null;
  text: string;
}

interface Session {
  /** The Cookie header value. */
  cookie: string;
  /** The raw session id. */
  id: string;
  /** The Set-Cookie header that opened it. */
  setCookie: string;
  csrf: string;
}

const randomToken = () => randomBytes(32).toString('base64url');

for (const backend of backends) {
  describe(`app security on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      t = await startTestService(backend);
    });
    after(() => t?.close());
    // Sign-in and decision links share a per-IP quota of 20 a minute: each test gets a new window,
    // from its start, so that the real seconds that pass cannot carry a count into the next one.
    const nextWindow = () => t.clock.advance(60_000 - (t.clock.now() % 60_000));
    beforeEach(nextWindow);

    async function request(
      method: 'GET' | 'POST',
      path: string,
      options: { cookie?: string; form?: Record<string, string>; headers?: Record<string, string> } = {},
      base = t.url,
    ): Promise<Page> {
      const headers: Record<string, string> = { ...options.headers };
      if (options.cookie) headers.cookie = options.cookie;
      let body: string | undefined;
      if (options.form) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams(options.form).toString();
      }
      const answer = await fetch(base + path, { method, headers, body, redirect: 'manual' });
      return {
        status: answer.status,
        location: answer.headers.get('location'),
        setCookie: answer.headers.get('set-cookie'),
        text: await answer.text(),
      };
    }

    const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)?.[1];

    /** Signs in through a one-time invite link, as the browser's button would. */
    async function signIn(
      workspace: Workspace,
      email: string,
      options: { cookie?: string; service?: TestService } = {},
    ): Promise<Session> {
      const service = options.service ?? t;
      const { url } = await inviteLink(service.service.ctx, workspace, email);
      const answer = await request('POST', new URL(url).pathname, { cookie: options.cookie }, service.url);
      assert.equal(answer.status, 303, answer.text);
      assert.equal(answer.location, '/app/inbox');
      const id = new RegExp(`^${COOKIE}=([^;]+)`).exec(answer.setCookie ?? '')?.[1];
      assert.ok(id, `a session cookie: ${answer.setCookie}`);
      const cookie = `${COOKIE}=${id}`;
      const inbox = await request('GET', '/app/inbox', { cookie }, service.url);
      assert.equal(inbox.status, 200);
      return { cookie, id, setCookie: answer.setCookie!, csrf: csrfOf(inbox.text)! };
    }

    const submit = async (key: string, overrides: Record<string, unknown> = {}) => {
      const answer = await call(t.url, 'POST', '/api/v1/holds', { key, body: submission(overrides) });
      assert.equal(answer.body.status, 'pending', answer.text);
      return answer.body.id as string;
    };
    const statusOf = async (key: string, id: string) =>
      (await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.status as string;
    const decide = (id: string, options: Parameters<typeof request>[2]) =>
      request('POST', `/app/holds/${id}/decide`, options);
    const decisionForm = (html: string, id?: string) =>
      html.includes(id ? `action="/app/holds/${id}/decide"` : '/decide"');

    test('a form POST without the CSRF token, or with a wrong one, is refused and changes nothing', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key);
      const admin = await signIn(workspace, 'admin@acme.test');
      const other = await signIn(workspace, 'second@acme.test');
      assert.ok(admin.csrf && other.csrf && admin.csrf !== other.csrf);

      const attempts: Record<string, string>[] = [
        { verdict: 'approve' },
        { verdict: 'approve', _csrf: '' },
        { verdict: 'approve', _csrf: randomToken() },
        { verdict: 'approve', _csrf: `${admin.csrf}x` },
        { verdict: 'approve', _csrf: admin.csrf.slice(0, -1) },
        // Another session's token is no good either: tokens are bound to their session.
        { verdict: 'approve', _csrf: other.csrf },
      ];
      for (const form of attempts) {
        const answer = await decide(id, { cookie: admin.cookie, form });
        assert.equal(answer.status, 403, JSON.stringify(form));
      }
      const json = await fetch(`${t.url}/app/holds/${id}/decide`, {
        method: 'POST',
        headers: { cookie: admin.cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ verdict: 'approve' }),
      });
      assert.ok(json.status >= 400, `a JSON body without the token answered ${json.status}`);
      assert.equal(await statusOf(key, id), 'pending');
      assert.match(
        (await request('GET', `/app/holds/${id}`, { cookie: admin.cookie })).text,
        /<strong class="count">0 of 1<\/strong>/,
      );

      // Sign-out is a form too.
      assert.equal((await request('POST', '/app/logout', { cookie: admin.cookie, form: {} })).status, 403);
      assert.equal((await request('GET', '/app/inbox', { cookie: admin.cookie })).status, 200);

      // With its token the same form works.
      const ok = await decide(id, { cookie: admin.cookie, form: { verdict: 'approve', _csrf: admin.csrf } });
      assert.equal(ok.status, 303);
      assert.equal(await statusOf(key, id), 'approved');
    });

    test('a POST from a foreign Origin is refused, signed in or not', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key);
      const admin = await signIn(workspace, 'admin@acme.test');
      const evil = { origin: 'https://evil.test' };

      const decided = await decide(id, {
        cookie: admin.cookie,
        form: { verdict: 'approve', _csrf: admin.csrf },
        headers: evil,
      });
      assert.equal(decided.status, 403);
      // Not even a look-alike of our own origin on another port or scheme.
      const port = new URL(t.url).port;
      for (const origin of [`http://127.0.0.1:${Number(port) + 1}`, `https://127.0.0.1:${port}`]) {
        const answer = await decide(id, {
          cookie: admin.cookie,
          form: { verdict: 'approve', _csrf: admin.csrf },
          headers: { origin },
        });
        assert.equal(answer.status, 403, origin);
      }
      assert.equal(await statusOf(key, id), 'pending');

      // Sign-in links: a foreign site cannot sign a visitor in (login CSRF); the link is not used up.
      const { url } = await inviteLink(t.service.ctx, workspace, 'bob@acme.test');
      const login = await request('POST', new URL(url).pathname, { headers: evil });
      assert.equal(login.status, 403);
      assert.equal(login.setCookie, null);
      // Decision links: a foreign page cannot submit one either.
      const hold = (await findHold(t.service.ctx.db, workspace.id, id))!;
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const link = await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' });
      const viaLink = await request('POST', new URL(link).pathname, {
        form: { verdict: 'approve' },
        headers: evil,
      });
      assert.equal(viaLink.status, 403);
      assert.equal(await statusOf(key, id), 'pending');
      const emailForm = await request('POST', '/app/login', {
        form: { email: 'admin@acme.test' },
        headers: evil,
      });
      assert.equal(emailForm.status, 403);

      // Our own origin passes; so do the unused sign-in link and decision link.
      const own = await decide(id, {
        cookie: admin.cookie,
        form: { verdict: 'reject', _csrf: admin.csrf },
        headers: { origin: new URL(t.url).origin },
      });
      assert.equal(own.status, 303);
      assert.equal(await statusOf(key, id), 'rejected');
      assert.equal((await request('POST', new URL(url).pathname)).status, 303);
    });

    test('the e-mail sign-in form answers a member and an unknown address alike, also while mail fails', async (tc) => {
      // What this checks: the status and the page. Time is not measured here; it is equal because the
      // answer waits for nothing that depends on the address (the link is queued after it, and mailed
      // by the notification worker), which is also why a failing mail server cannot change it.
      const smtp = await startSmtp();
      const mailLink = await startTcpProxy('127.0.0.1', smtp.port);
      const mailing = await startTestService(backend, {
        env: { SMTP_URL: `smtp://127.0.0.1:${mailLink.port}`, NOTIFY_RETRY_SCALE: '0.01' },
      });
      tc.after(async () => {
        await mailing.close();
        await Promise.all([mailLink.close(), smtp.close()]);
      });
      const { workspace } = await mailing.workspace({ config: CONFIG });
      const ask = async (email: string) => {
        const { status, text } = await request('POST', '/app/login', { form: { email } }, mailing.url);
        return { status, text };
      };
      const signInWith = async (mail: Mail) => {
        const link = mail.links.find((url) => url.startsWith(`${mailing.url}/app/login/`));
        assert.ok(link, mail.body);
        assert.equal((await request('POST', new URL(link).pathname, {}, mailing.url)).status, 303);
        return new URL(link).pathname.split('/').at(-1)!;
      };

      const member = await ask('bob@acme.test');
      assert.equal(member.status, 200);
      assert.match(member.text, /If this address belongs to a member/);
      assert.deepEqual(await ask('nobody@acme.test'), member);
      await signInWith(await smtp.next('bob@acme.test'));

      // The mail server is away: still the same answer for both, and the mail waits to be retried.
      await mailLink.cut();
      assert.deepEqual(await ask('bob@acme.test'), member);
      assert.deepEqual(await ask('nobody@acme.test'), member);
      const bob = (await findMemberByEmail(mailing.service.ctx.db, workspace.id, 'bob@acme.test'))!;
      await until('the sign-in mail to have failed once', () =>
        mailing.service.ctx.db.one(
          `SELECT id FROM notifications WHERE member_id = $1 AND state = 'pending' AND attempts >= 1`,
          [bob.id],
        ),
      );
      await mailLink.restore();
      const token = await signInWith(await smtp.next('bob@acme.test', 15_000));
      assert.equal(smtp.messagesTo('nobody@acme.test').length, 0, 'no mail for an unknown address');
      // The link was made when it was sent; only its hash is stored, the queue holds none of it.
      const stored = JSON.stringify(await mailing.service.ctx.db.all('SELECT * FROM notifications'));
      assert.ok(!stored.includes(token), 'the link in the notification queue');
    });

    test('a cross-site POST that hides its origin (Origin: null) cannot sign a visitor in', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
      const crossSite = { origin: 'null', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' };
      const answer = await request('POST', new URL(url).pathname, { headers: crossSite });
      assert.equal(answer.status, 403);
      assert.equal(answer.setCookie, null);
    });

    test('a viewer sees no decision form and cannot decide', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key);
      const vic = await signIn(workspace, 'vic@acme.test');
      const inbox = await request('GET', '/app/inbox', { cookie: vic.cookie });
      assert.equal(inbox.status, 200);
      assert.ok(!decisionForm(inbox.text), 'no decision form in the inbox');
      const page = await request('GET', `/app/holds/${id}`, { cookie: vic.cookie });
      assert.equal(page.status, 200);
      assert.ok(page.text.includes(id));
      assert.ok(!decisionForm(page.text), 'no decision form on the hold page');
      for (const verdict of ['approve', 'reject']) {
        const answer = await decide(id, { cookie: vic.cookie, form: { verdict, _csrf: vic.csrf } });
        assert.equal(answer.status, 403, verdict);
      }
      assert.equal(await statusOf(key, id), 'pending');
    });

    test('a member who is not among the approvers of a hold cannot decide it', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key, { tool_name: 'pay', arguments: { amount: 10 } });
      const carol = await signIn(workspace, 'carol@acme.test');
      const bob = await signIn(workspace, 'bob@acme.test');
      const carolInbox = await request('GET', '/app/inbox', { cookie: carol.cookie });
      assert.ok(!carolInbox.text.includes(id), 'not in her inbox');
      const page = await request('GET', `/app/holds/${id}`, { cookie: carol.cookie });
      assert.equal(page.status, 200);
      assert.ok(!decisionForm(page.text, id), 'no decision form for her');
      const refused = await decide(id, {
        cookie: carol.cookie,
        form: { verdict: 'approve', _csrf: carol.csrf },
      });
      assert.equal(refused.status, 403);
      assert.equal(await statusOf(key, id), 'pending');

      // The named approver can.
      assert.ok(decisionForm((await request('GET', '/app/inbox', { cookie: bob.cookie })).text, id));
      const ok = await decide(id, { cookie: bob.cookie, form: { verdict: 'approve', _csrf: bob.csrf } });
      assert.equal(ok.status, 303);
      assert.equal(await statusOf(key, id), 'approved');
    });

    test("a member of one workspace can neither see nor decide another workspace's holds", async () => {
      const mine = await t.workspace({ config: CONFIG });
      const theirs = await t.workspace({ config: CONFIG });
      const id = await submit(theirs.key);
      const admin = await signIn(mine.workspace, 'admin@acme.test');
      assert.ok(!(await request('GET', '/app/inbox', { cookie: admin.cookie })).text.includes(id));
      assert.equal((await request('GET', `/app/holds/${id}`, { cookie: admin.cookie })).status, 404);
      const answer = await decide(id, {
        cookie: admin.cookie,
        form: { verdict: 'approve', _csrf: admin.csrf },
      });
      assert.equal(answer.status, 404);
      // Their member's decision link, opened while signed in here: as unknown as their holds.
      const member = (await findMemberByEmail(t.service.ctx.db, theirs.workspace.id, 'admin@acme.test'))!;
      const hold = (await findHold(t.service.ctx.db, theirs.workspace.id, id))!;
      const link = new URL(
        await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' }),
      ).pathname;
      const opened = await request('GET', link, { cookie: admin.cookie });
      assert.equal(opened.status, 404);
      assert.match(opened.text, /Link not valid/);
      const used = await request('POST', link, { cookie: admin.cookie, form: { verdict: 'approve' } });
      assert.equal(used.status, 404);
      assert.equal(await statusOf(theirs.key, id), 'pending');
    });

    test('embed tokens are listed on the Widget page and revoked one by one, refused at the next widget request', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const memberOf = async (email: string) =>
        (await findMemberByEmail(t.service.ctx.db, workspace.id, email))!;
      const bob = await signIn(workspace, 'bob@acme.test');
      const admin = await signIn(workspace, 'admin@acme.test');
      const made = await request('POST', '/app/widget/token', {
        cookie: bob.cookie,
        form: { _csrf: bob.csrf },
      });
      assert.equal(made.status, 200);
      const used = /id="embed-token">([^<]+)</.exec(made.text)![1]!;
      const unused = (await mintEmbedToken(t.service.ctx, await memberOf('bob@acme.test'))).token;
      const carols = (await mintEmbedToken(t.service.ctx, await memberOf('carol@acme.test'))).token;
      const widget = async (token: string) =>
        (await request('GET', '/widget/api/holds', { headers: { authorization: `Bearer ${token}` } })).status;
      assert.equal(await widget(used), 200);
      const revoke = (session: Session, token: string) =>
        request('POST', '/app/widget/tokens/revoke', {
          cookie: session.cookie,
          form: { _csrf: session.csrf, token: sha256Hex(token) },
        });
      /** The row of the Widget page's token table that can revoke `token`, if any. */
      const rowOf = async (session: Session, token: string) =>
        (await request('GET', '/app/widget', { cookie: session.cookie })).text
          .split('<tr')
          .find((row) => row.includes(`value="${sha256Hex(token)}"`));

      // An approver sees and revokes their own tokens; an admin sees and revokes everyone's.
      const row = (await rowOf(bob, used))!;
      assert.ok(row, 'the token made on the page is listed');
      assert.match(row, /Bob/);
      assert.match(row, /data-label="Last used">\s*<time/, 'with its last use');
      assert.match((await rowOf(bob, unused))!, /data-label="Last used">\s*never/);
      assert.equal(await rowOf(bob, carols), undefined, "another member's token is not listed");
      assert.match((await rowOf(admin, carols))!, /Carol/);
      assert.equal((await revoke(bob, carols)).status, 404);
      assert.equal(await widget(carols), 200, 'not revoked by someone else');

      const revoked = await revoke(bob, used);
      assert.equal(revoked.status, 303);
      assert.equal(await widget(used), 401, 'refused at the next request');
      assert.equal(await widget(unused), 200, 'the others still work');
      assert.equal(await rowOf(bob, used), undefined, 'no longer listed');
      assert.equal((await revoke(admin, carols)).status, 303);
      assert.equal(await widget(carols), 401);
      // Viewers have no widget; a revocation without the CSRF token changes nothing.
      const vic = await signIn(workspace, 'vic@acme.test');
      assert.equal((await revoke(vic, unused)).status, 403);
      const forged = await request('POST', '/app/widget/tokens/revoke', {
        cookie: bob.cookie,
        form: { token: sha256Hex(unused) },
      });
      assert.equal(forged.status, 403);
      assert.equal(await widget(unused), 200);
    });

    test('removing a member ends their session, links and embed tokens; adding them back revives none', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key, { tool_name: 'send_invoice' });
      const carol = await signIn(workspace, 'carol@acme.test');
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'carol@acme.test'))!;
      const hold = (await findHold(t.service.ctx.db, workspace.id, id))!;
      const link = await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' });
      const signInUrl = (await inviteLink(t.service.ctx, workspace, 'carol@acme.test')).url;
      const embed = await mintEmbedToken(t.service.ctx, member);
      const widgetHolds = () =>
        fetch(`${t.url}/widget/api/holds`, { headers: { authorization: `Bearer ${embed.token}` } });
      assert.equal((await widgetHolds()).status, 200);

      const without = CONFIG.replace(/^ {2}- \{ email: carol.*\n/m, '');
      assert.notEqual(without, CONFIG);
      await applyConfig(t.service.ctx, workspace, parseConfig(without));
      await applyConfig(t.service.ctx, workspace, parseConfig(CONFIG));

      const inbox = await request('GET', '/app/inbox', { cookie: carol.cookie });
      assert.equal(inbox.status, 303, 'the old session is gone');
      assert.equal((await widgetHolds()).status, 401, 'the embed token is gone');
      const linkPage = await request('GET', new URL(link).pathname);
      assert.doesNotMatch(linkPage.text, /Approve this action\?/, 'the decision link is gone');
      const used = await request('POST', new URL(link).pathname, { form: { verdict: 'approve' } });
      assert.ok(used.status >= 400, `deciding by the old link: ${used.status}`);
      const again = await request('POST', new URL(signInUrl).pathname);
      assert.ok(!again.setCookie?.includes(`${COOKIE}=`), 'the old sign-in link opens no session');
      assert.equal(await statusOf(key, id), 'pending');
    });

    test('API keys never open the app, and app sessions never open the API', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key);
      const bearer = { authorization: `Bearer ${key}` };
      for (const path of ['/app/inbox', `/app/holds/${id}`, '/app/history', '/app/events']) {
        const answer = await request('GET', path, { headers: bearer });
        assert.equal(answer.status, 303, path);
        assert.match(answer.location ?? '', /^\/app\/login(\?next=%2Fapp%2F.*)?$/, path);
      }
      const post = await decide(id, { headers: bearer, form: { verdict: 'approve' } });
      assert.equal(post.status, 401);
      assert.equal(await statusOf(key, id), 'pending');

      const admin = await signIn(workspace, 'admin@acme.test');
      const viaCookie = await call(t.url, 'GET', `/api/v1/holds/${id}`, {
        headers: { cookie: admin.cookie },
      });
      assert.equal(viaCookie.status, 401);
      assert.equal(viaCookie.body.error, 'unauthorized');
      assert.match(viaCookie.headers.get('www-authenticate') ?? '', /^Bearer/);
      const submitted = await call(t.url, 'POST', '/api/v1/holds', {
        headers: { cookie: admin.cookie },
        body: submission(),
      });
      assert.equal(submitted.status, 401);
      // Nor does the session id pass as a key.
      const asKey = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key: admin.id });
      assert.equal(asKey.status, 401);
    });

    test('session cookies: HttpOnly, SameSite=Lax, Path=/, and Secure when PUBLIC_URL is https', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const attributes = (setCookie: string) =>
        setCookie
          .split(';')
          .slice(1)
          .map((part) => part.trim().toLowerCase());
      const plain = attributes((await signIn(workspace, 'admin@acme.test')).setCookie);
      assert.ok(plain.includes('httponly'), plain.join('; '));
      assert.ok(plain.includes('samesite=lax'), plain.join('; '));
      assert.ok(plain.includes('path=/'), plain.join('; '));
      assert.ok(!plain.includes('secure'), 'no Secure over plain http');

      const https = await startTestService(backend, { env: { PUBLIC_URL: 'https://approvals.test' } });
      try {
        const other = await https.workspace({ config: CONFIG });
        const { url } = await inviteLink(https.service.ctx, other.workspace, 'admin@acme.test');
        assert.match(url, /^https:\/\/approvals\.test\/app\/login\//);
        const session = await signIn(other.workspace, 'admin@acme.test', { service: https });
        const secure = attributes(session.setCookie);
        for (const flag of ['secure', 'httponly', 'samesite=lax', 'path=/']) {
          assert.ok(secure.includes(flag), `${flag}: ${session.setCookie}`);
        }
        const out = await request(
          'POST',
          '/app/logout',
          { cookie: session.cookie, form: { _csrf: session.csrf } },
          https.url,
        );
        assert.equal(out.status, 303);
        assert.ok(attributes(out.setCookie ?? '').includes('secure'), `cleared: ${out.setCookie}`);
      } finally {
        await https.close();
      }
    });

    test('signing out ends the session: the old cookie opens nothing', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      const id = await submit(key);
      const admin = await signIn(workspace, 'admin@acme.test');
      const out = await request('POST', '/app/logout', { cookie: admin.cookie, form: { _csrf: admin.csrf } });
      assert.equal(out.status, 303);
      assert.equal(out.location, '/app/login');
      assert.match(out.setCookie ?? '', new RegExp(`^${COOKIE}=;`));
      assert.match(out.setCookie ?? '', /Max-Age=0/i);

      const inbox = await request('GET', '/app/inbox', { cookie: admin.cookie });
      assert.equal(inbox.status, 303);
      assert.match(inbox.location ?? '', /^\/app\/login/);
      assert.equal((await request('GET', '/app/events', { cookie: admin.cookie })).status, 303);
      const late = await decide(id, {
        cookie: admin.cookie,
        form: { verdict: 'approve', _csrf: admin.csrf },
      });
      assert.equal(late.status, 401);
      assert.equal(await statusOf(key, id), 'pending');
    });

    test('every sign-in gets a new session id; a cookie set before sign-in is never reused', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const planted = `${COOKIE}=${randomToken()}`;
      const first = await signIn(workspace, 'admin@acme.test', { cookie: planted });
      assert.notEqual(first.cookie, planted);
      assert.equal(
        (await request('GET', '/app/inbox', { cookie: planted })).status,
        303,
        'planted id is no session',
      );

      // Signing in again while signed in: a new id, not the old one.
      const second = await signIn(workspace, 'admin@acme.test', { cookie: first.cookie });
      assert.notEqual(second.id, first.id);
      assert.notEqual(second.csrf, first.csrf);
      const ids = new Set([first.id, second.id]);
      for (let i = 0; i < 3; i++) ids.add((await signIn(workspace, 'admin@acme.test')).id);
      assert.equal(ids.size, 5);
      for (const id of ids) assert.ok(id.length >= 43, 'at least 256 bits');
    });

    test('the first-run setup creates one workspace, even when its form is posted concurrently', async () => {
      const empty = await startTestService(backend);
      try {
        const answers = await Promise.all(
          [1, 2, 3, 4, 5].map((n) =>
            request(
              'POST',
              '/app/setup',
              { form: { name: `W${n}`, slug: `w${n}`, admin_name: 'A', admin_email: `a${n}@acme.test` } },
              empty.url,
            ),
          ),
        );
        const count = await empty.service.ctx.db.one<{ n: number }>('SELECT COUNT(*) AS n FROM workspaces');
        assert.equal(Number(count!.n), 1);
        assert.equal(answers.filter((a) => a.status === 303).length, 1, answers.map((a) => a.status).join());
        assert.equal(answers.filter((a) => a.setCookie).length, 1);
      } finally {
        await empty.close();
      }
    });

    test('brute force on sign-in links, decision links and embed tokens is rate-limited per IP', async () => {
      const { workspace, key } = await t.workspace({ config: CONFIG });
      // Start at the beginning of a minute's window, so no count below is split by the minute turning.
      await t.clock.advance(60_000 - (t.clock.now() % 60_000));
      const hammer = async (method: 'GET' | 'POST', path: () => string, times: number) => {
        const statuses: number[] = [];
        for (let i = 0; i < times; i++) {
          // A forged X-Forwarded-For does not make a new client.
          const headers = { 'x-forwarded-for': `10.0.${i}.1` };
          const answer = await request(method, path(), { headers, form: method === 'POST' ? {} : undefined });
          statuses.push(answer.status);
        }
        return statuses;
      };
      const limited = (statuses: number[]) => statuses.findIndex((status) => status === 429);

      // Sign-in links, by GET and POST alike: 20 guesses a minute, then 429.
      const guesses = [
        ...(await hammer('GET', () => `/app/login/${randomToken()}`, 10)),
        ...(await hammer('POST', () => `/app/login/${randomToken()}`, 15)),
      ];
      assert.equal(limited(guesses), 20, guesses.join(','));
      assert.ok(
        guesses.slice(20).every((status) => status === 429),
        guesses.join(','),
      );
      const retry = await fetch(`${t.url}/app/login/${randomToken()}`, {
        method: 'POST',
        redirect: 'manual',
      });
      assert.equal(retry.status, 429);
      assert.ok(Number(retry.headers.get('retry-after')) > 0, 'Retry-After');
      // While limited, even a good link is turned away, and not used up by that.
      const { url } = await inviteLink(t.service.ctx, workspace, 'admin@acme.test');
      assert.equal((await request('POST', new URL(url).pathname)).status, 429);
      nextWindow();
      assert.equal((await request('POST', new URL(url).pathname)).status, 303);

      // Decision links.
      nextWindow();
      const links = [
        ...(await hammer('GET', () => `/d/${randomToken()}`, 12)),
        ...(await hammer('POST', () => `/d/${randomToken()}?verdict=approve`, 12)),
      ];
      assert.equal(limited(links), 20, links.join(','));
      const id = await submit(key);
      const hold = (await findHold(t.service.ctx.db, workspace.id, id))!;
      const member = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const link = await mintDecisionLink(t.service.ctx, { hold, memberId: member.id, channel: 'email' });
      const blocked = await request('POST', new URL(link).pathname, { form: { verdict: 'approve' } });
      assert.equal(blocked.status, 429);
      assert.equal(await statusOf(key, id), 'pending');

      // The e-mail form.
      nextWindow();
      const mails = await hammer('POST', () => '/app/login', 22);
      assert.equal(limited(mails), 20, mails.join(','));

      // Embed tokens of the widget's API; a good token still works meanwhile (it is not counted).
      nextWindow();
      const embeds = await hammer('GET', () => '/widget/api/holds', 22);
      assert.equal(limited(embeds), 20, embeds.join(','));
      const admin = (await findMemberByEmail(t.service.ctx.db, workspace.id, 'admin@acme.test'))!;
      const { token } = await mintEmbedToken(t.service.ctx, admin);
      const good = await request('GET', '/widget/api/holds', {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(good.status, 200);
    });
  });
}
