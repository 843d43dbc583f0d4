/**
 * The webhook admin page: set, change and remove the endpoint through `applyConfig`, the signing
 * secret shown once (when made and when rotated), the delivery log with every attempt, dead letters
 * and redelivery — against a small receiver on a loopback port that the test scripts.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { findWebhookEndpoint } from '../src/store/webhooks.ts';
import type { Workspace } from '../src/store/workspaces.ts';
import { appClient, lastEvidence, verifiedEvidence, type Session } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { decideAs, startTestService, type TestService } from './support/service.ts';

const WORKSPACE = `members:
  - { email: admin@acme.test, name: Ada Admin, role: admin }
  - { email: approver@acme.test, name: Avery Approver, role: approver }
  - { email: viewer@acme.test, name: Vic Viewer, role: viewer }
tools:
  - { connection: SDK, tool: pay, classification: approval }
rules:
  - { name: Admin pays, tool: pay, effect: approval, approvers: [admin@acme.test] }
`;

const PAGE = '/app/admin/webhook';
const POSTS = [PAGE, `${PAGE}/rotate`, `${PAGE}/delete`, `${PAGE}/redeliver`, `${PAGE}/test`];
const SECRET_BOX = /<p class="secret" id="new-secret-value">(whsec_[A-Za-z0-9+/]{43}=)<\/p>/;

interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** A webhook receiver on 127.0.0.1 that answers `status` and keeps every request. */
async function startReceiver() {
  const received: Received[] = [];
  const receiver = {
    status: 200,
    received,
    url: '',
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      response.writeHead(receiver.status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  receiver.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`;
  return receiver;
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const sign = (secret: string, body: string) => createHmac('sha256', secret).update(body).digest('hex');

async function until<T>(what: string, check: () => Promise<T | undefined | false>, step?: () => void) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    step?.();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

for (const backend of backends) {
  describe(`the webhook page on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    let receiver: Receiver;
    let workspace: Workspace;
    let key: string;
    let admin: Session;
    let approver: Session;
    let viewer: Session;
    let secret = '';
    const { get, follow, post, signIn } = appClient(() => t);

    const evidence = () => verifiedEvidence(t, key);
    const lastEntry = () => lastEvidence(t, workspace);
    const endpoint = () => findWebhookEndpoint(t.service.ctx.db, workspace.id);
    /** A held call, decided: its webhook event is stored with the decision. */
    const decided = async (verdict: 'approve' | 'reject') => {
      const answer = await call(t.url, 'POST', '/api/v1/holds', {
        key,
        body: submission({ tool_name: 'pay', arguments: { amount: 42 } }),
      });
      assert.equal(answer.status, 201, answer.text);
      assert.equal(answer.body.status, 'pending');
      await decideAs(t, workspace.id, answer.body.id, verdict);
      return answer.body.id as string;
    };
    const deliveriesOf = (hold: string) =>
      receiver.received.filter((r) => (JSON.parse(r.body) as { id: string }).id === hold);
    /** The log's row pair of one hold's event. */
    const rowOf = (text: string, hold: string) => {
      const start = text.indexOf(`<a href="/app/holds/${hold}">`);
      assert.ok(start >= 0, `${hold} in the log`);
      const from = text.lastIndexOf('<tr class="event">', start);
      const end = text.indexOf('<tr class="event">', start);
      return text.slice(from, end < 0 ? text.indexOf('</tbody>', start) : end);
    };

    before(async () => {
      receiver = await startReceiver();
      t = await startTestService(backend, {
        env: { ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_RETRY_SCALE: '0.0001' },
      });
      ({ workspace, key } = await t.workspace({ config: WORKSPACE }));
      admin = await signIn(workspace, 'admin@acme.test');
      approver = await signIn(workspace, 'approver@acme.test');
      viewer = await signIn(workspace, 'viewer@acme.test');
    });
    after(async () => {
      await t?.close();
      await receiver?.close();
    });

    test('only admins see the page; approvers, viewers and signed-out requests are refused', async () => {
      const page = await get(admin, PAGE);
      assert.equal(page.status, 200);
      assert.match(page.text, /<a href="\/app\/admin\/webhook"\s+aria-current="page"\s*>Webhook<\/a/);
      assert.match(page.text, /id="endpoint-state"><span class="status">none<\/span>/);
      assert.match(page.text, /No events yet/);
      assert.doesNotMatch((await get(approver, '/app/inbox')).text, /\/app\/admin\/webhook/);

      const checked = await evidence();
      for (const session of [approver, viewer]) {
        for (const path of [PAGE, `${PAGE}?state=dead`]) {
          const refused = await get(session, path);
          assert.equal(refused.status, 403, path);
          assert.match(refused.text, /for workspace admins/);
        }
        for (const path of POSTS) {
          const refused = await post(session, path, { url: receiver.url, confirm: 'yes', all: 'dead' });
          assert.equal(refused.status, 403, path);
          assert.match(refused.text, /for workspace admins/);
        }
      }
      const signedOut = await get(null, PAGE);
      assert.equal(signedOut.status, 303);
      assert.match(signedOut.location ?? '', /^\/app\/login/);
      for (const path of POSTS) assert.equal((await post(null, path, { url: receiver.url })).status, 401);
      assert.equal(await endpoint(), undefined);
      assert.equal(await evidence(), checked);
    });

    test('a form without the session CSRF token, or from another site, changes nothing', async () => {
      const checked = await evidence();
      for (const csrf of [null, '', 'wrong-token', approver.csrf]) {
        for (const path of POSTS) {
          const refused = await post(admin, path, { url: receiver.url, confirm: 'yes', all: 'dead' }, csrf);
          assert.equal(refused.status, 403, path);
          assert.doesNotMatch(refused.text, /whsec_/);
        }
      }
      const foreign = await post(admin, PAGE, { url: receiver.url }, admin.csrf, {
        origin: 'https://evil.example',
      });
      assert.equal(foreign.status, 403);
      assert.equal(await endpoint(), undefined);
      assert.equal(await evidence(), checked);
    });

    test('a URL that is not http(s), or carries credentials, is refused next to the field', async () => {
      const checked = await evidence();
      for (const [url, message] of [
        ['', 'Enter the URL of your receiver.'],
        ['ftp://example.com/hook', 'must be an http or https URL'],
        ['not a url', 'must be an http or https URL'],
        [
          'https://user:pw@hooks.example.com/in',
          'must not carry credentials (user:password@); send them as headers',
        ],
      ]) {
        const refused = await post(admin, PAGE, { url: url! });
        assert.equal(refused.status, 422, url);
        assert.ok(refused.text.includes(`id="w-url-error">${message}</p>`), url);
        assert.match(refused.text, /aria-invalid="true" aria-describedby="w-url-error"/);
        assert.match(refused.text, /Nothing was changed/);
        assert.doesNotMatch(refused.text, /whsec_[A-Za-z0-9]/);
      }
      assert.equal(await endpoint(), undefined);
      assert.equal(await evidence(), checked);
    });

    test('setting the URL shows the secret once; events then arrive signed with it', async () => {
      const checked = await evidence();
      const set = await post(admin, PAGE, { url: receiver.url });
      assert.equal(set.status, 200, set.text.slice(0, 2000));
      secret = set.text.match(SECRET_BOX)?.[1] ?? '';
      assert.ok(secret, 'the secret in a .secret box');
      assert.match(set.text, /It will not be shown again/);
      assert.equal(set.text.split(secret).length, 2, 'shown exactly once on the page');
      assert.equal(await evidence(), checked + 1);
      const entry = await lastEntry();
      assert.equal(entry.type, 'config.applied');
      assert.deepEqual(entry.data.webhook, { url: receiver.url, new_secret: true });
      assert.ok(!JSON.stringify(entry.data).includes(secret), 'never in evidence');

      const again = await get(admin, PAGE);
      assert.equal(again.status, 200);
      assert.ok(!again.text.includes(secret), 'never shown again');
      assert.doesNotMatch(again.text, /class="secret"/);
      assert.match(again.text, /id="endpoint-state"><span class="status approved">active<\/span>/);
      assert.ok(again.text.includes(`<code class="url">${receiver.url}</code>`));

      const hold = await decided('approve');
      const [delivery] = await until(
        'the event',
        async () => deliveriesOf(hold).length > 0 && deliveriesOf(hold),
      );
      assert.equal(delivery!.headers['content-type'], 'application/json');
      assert.equal(delivery!.headers['x-service-event'], 'hold.approved');
      assert.equal(delivery!.headers['x-service-signature'], sign(secret, delivery!.body));
      const body = JSON.parse(delivery!.body);
      assert.equal(body.event, 'hold.approved');
      assert.equal(body.id, hold);

      const log = await until('the delivered state', async () => {
        const page = await get(admin, PAGE);
        return page.text.includes('status approved">delivered') && page.text;
      });
      const row = rowOf(log, hold);
      assert.match(row, /<code>hold\.approved<\/code>/);
      assert.match(row, /status approved">delivered/);
      assert.match(row, /class="attempt-count">1 attempt</);
      assert.match(row, /HTTP 200 OK/);
      assert.match(row, /<details>/);
      assert.ok(row.includes(`<code>${delivery!.headers['x-service-delivery']}</code>`));
    });

    test('send test event: a signed webhook.test event through the outbox, shown in the log', async () => {
      const checked = await evidence();
      const sent = await post(admin, `${PAGE}/test`, {});
      assert.equal(sent.status, 303, sent.text.slice(0, 2000));
      assert.equal(sent.location, PAGE);
      assert.equal(sent.notice, 'tested');
      const tests = () => receiver.received.filter((r) => JSON.parse(r.body).event === 'webhook.test');
      const [delivery] = await until('the test event', async () => tests().length > 0 && tests());
      assert.equal(delivery!.headers['x-service-event'], 'webhook.test');
      assert.equal(delivery!.headers['x-service-signature'], sign(secret, delivery!.body));
      const body = JSON.parse(delivery!.body);
      assert.match(body.id, /^test:msg_/);
      assert.equal(body.data.orgId, workspace.id);
      assert.equal(await evidence(), checked, 'a test changes nothing, so it is not evidenced');

      const log = await until('the delivered test', async () => {
        const page = await get(admin, PAGE);
        return page.text.includes(`<code>${body.id}</code>`) && page.text.includes('delivered') && page.text;
      });
      const row = log.slice(log.lastIndexOf('<tr class="event">', log.indexOf(`<code>${body.id}</code>`)));
      assert.match(row, /<code>webhook\.test<\/code>/);
      assert.doesNotMatch(row.slice(0, row.indexOf('</tr>')), /href="\/app\/holds\//);
    });

    test('changing the URL keeps the secret and shows none', async () => {
      const checked = await evidence();
      const other = receiver.url.replace('/hook', '/other');
      const changed = await post(admin, PAGE, { url: other });
      assert.equal(changed.status, 303);
      assert.equal(changed.location, PAGE);
      assert.equal(changed.notice, 'updated');
      assert.equal(await evidence(), checked + 1);
      const entry = await lastEntry();
      assert.equal(entry.type, 'config.applied');
      assert.deepEqual(entry.data.webhook, { url: other, new_secret: false });
      const page = await follow(admin, changed);
      assert.match(page.text, /Endpoint saved/);
      assert.ok(page.text.includes(`<code class="url">${other}</code>`));
      assert.doesNotMatch(page.text, /whsec_[A-Za-z0-9]/);

      const hold = await decided('reject');
      const [delivery] = await until(
        'the event',
        async () => deliveriesOf(hold).length > 0 && deliveriesOf(hold),
      );
      assert.equal(delivery!.path, '/other');
      assert.equal(delivery!.headers['x-service-event'], 'hold.rejected');
      assert.equal(delivery!.headers['x-service-signature'], sign(secret, delivery!.body));
      assert.equal((await post(admin, PAGE, { url: receiver.url })).status, 303);
    });

    test('rotating asks first, then shows the new secret once; both sign for 24 hours', async () => {
      const checked = await evidence();
      const asked = await post(admin, `${PAGE}/rotate`, {});
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Rotate the signing secret\?/);
      assert.match(asked.text, /name="confirm" value="yes"/);
      assert.doesNotMatch(asked.text, /whsec_[A-Za-z0-9]/);
      assert.equal(await evidence(), checked);

      const rotated = await post(admin, `${PAGE}/rotate`, { confirm: 'yes' });
      assert.equal(rotated.status, 200);
      const fresh = rotated.text.match(SECRET_BOX)?.[1] ?? '';
      assert.ok(fresh, 'the new secret in a .secret box');
      assert.notEqual(fresh, secret);
      assert.equal(rotated.text.split(fresh).length, 2, 'shown exactly once');
      assert.ok(!rotated.text.includes(secret), 'the old secret is not shown');
      assert.match(rotated.text, /It will not be shown again/);
      const until24h = new Date((await endpoint())!.previousUntil!).toISOString();
      assert.ok(
        rotated.text.includes(`keeps signing too for 24 hours, until <time datetime="${until24h}">`),
        'says until when the old secret signs',
      );
      assert.equal(await evidence(), checked + 1);
      const entry = await lastEntry();
      assert.equal(entry.type, 'webhook.secret_rotated');
      assert.equal(entry.data.previous_valid_until, until24h);

      const page = await get(admin, PAGE);
      assert.ok(!page.text.includes(fresh) && !page.text.includes(secret), 'neither is shown again');
      assert.match(page.text, /The previous secret also signs every event until/);

      const hold = await decided('approve');
      const [delivery] = await until(
        'the event',
        async () => deliveriesOf(hold).length > 0 && deliveriesOf(hold),
      );
      assert.equal(
        delivery!.headers['x-service-signature'],
        `${sign(fresh, delivery!.body)},${sign(secret, delivery!.body)}`,
        'the new secret signs first, the old one beside it',
      );
      secret = fresh;
    });

    test('failing events end dead after 25 attempts and are redelivered once the receiver answers', async () => {
      receiver.status = 500;
      const holds = [await decided('approve'), await decided('reject'), await decided('approve')];
      // The retry schedule runs at 1/10,000 speed; moving the clock on makes every retry due at once.
      const dead = await until(
        'three dead letters',
        async () => {
          const page = await get(admin, `${PAGE}?state=dead`);
          return holds.every((hold) => page.text.includes(`/app/holds/${hold}"`)) && page.text;
        },
        () => t.clock.advance(2_000),
      );
      for (const hold of holds) {
        const row = rowOf(dead, hold);
        assert.match(row, /status rejected">dead/);
        assert.match(row, /class="attempt-count">25 attempts</);
        assert.match(row, /HTTP 500 Internal Server Error/);
        assert.equal(row.match(/<td>\d+<\/td>/g)?.length, 25, 'every attempt listed');
        assert.match(row, /Redeliver<span class="visually-hidden">/);
        assert.equal(deliveriesOf(hold).length, 25);
      }
      assert.match(dead, /Redeliver all dead \(3\)/);
      assert.match(dead, /<option value="dead"\s+selected>/);
      assert.ok(!dead.includes('status approved">delivered'), 'the filter shows dead events only');
      const delivered = await get(admin, `${PAGE}?state=delivered`);
      assert.ok(!delivered.text.includes(`/app/holds/${holds[0]}"`));
      assert.match(delivered.text, /status approved">delivered/);

      // One by id: it is queued again, and now the receiver answers.
      receiver.status = 200;
      const id = deliveriesOf(holds[0]!)[0]!.headers['x-service-delivery'] as string;
      const one = await post(admin, `${PAGE}/redeliver`, { id });
      assert.equal(one.status, 303);
      assert.equal(one.location, PAGE);
      assert.equal(one.notice, 'redelivered:1');
      assert.match((await follow(admin, one)).text, /1 event is queued again/);
      await until('the one redelivery', async () => deliveriesOf(holds[0]!).length === 26);
      assert.equal(deliveriesOf(holds[1]!).length, 25, 'the others stay dead');
      assert.equal((await post(admin, `${PAGE}/redeliver`, { id: 'msg_nope' })).status, 404);

      const all = await post(admin, `${PAGE}/redeliver`, { all: 'dead' });
      assert.equal(all.status, 303);
      assert.equal(all.location, PAGE);
      assert.equal(all.notice, 'redelivered:2');
      assert.match((await follow(admin, all)).text, /2 events are queued again/);
      await until(
        'the redeliveries',
        async () => deliveriesOf(holds[1]!).length === 26 && deliveriesOf(holds[2]!).length === 26,
      );
      for (const hold of holds) {
        const last = deliveriesOf(hold).at(-1)!;
        assert.equal(String(last.headers['x-service-signature']).split(',')[0], sign(secret, last.body));
      }
      const log = await until('all delivered', async () => {
        const page = await get(admin, PAGE);
        return (
          holds.every((hold) => rowOf(page.text, hold).includes('status approved">delivered')) && page.text
        );
      });
      for (const hold of holds)
        assert.match(rowOf(log, hold), /26 attempts<\/span> · last:\s*<span class="ok">HTTP 200 OK/);
      assert.doesNotMatch(log, /Redeliver all dead/);
      const none = await post(admin, `${PAGE}/redeliver`, { all: 'dead' });
      assert.equal(none.notice, 'redelivered:0');
      assert.match((await follow(admin, none)).text, /Nothing to redeliver: no dead events/);
    });

    test('a receiver answering 410 disables the endpoint; saving the URL enables it again', async () => {
      receiver.status = 410;
      const hold = await decided('approve');
      await until('the endpoint disabled', async () => (await endpoint())?.disabledAt != null);
      const page = await get(admin, PAGE);
      assert.match(
        page.text,
        /id="endpoint-state"><span class="status rejected">disabled<\/span> since <time/,
      );
      assert.match(page.text, /answered <code>410 Gone<\/code>/);
      assert.match(page.text, /Enable again/);

      receiver.status = 200;
      const checked = await evidence();
      const enabled = await post(admin, PAGE, { url: receiver.url });
      assert.equal(enabled.status, 303);
      assert.equal(enabled.location, PAGE);
      assert.equal(enabled.notice, 'enabled');
      assert.equal(await evidence(), checked + 1);
      assert.equal((await lastEntry()).type, 'config.applied');
      assert.equal((await endpoint())?.disabledAt, null);
      const shown = await follow(admin, enabled);
      assert.match(shown.text, /Endpoint enabled again/);
      assert.doesNotMatch(shown.text, /whsec_[A-Za-z0-9]/);
      await until('the waiting event', async () => deliveriesOf(hold).length >= 2);
      await until('delivered', async () => {
        const log = await get(admin, PAGE);
        return rowOf(log.text, hold).includes('status approved">delivered');
      });
    });

    test('removing the endpoint asks first, then stops events', async () => {
      const checked = await evidence();
      const asked = await post(admin, `${PAGE}/delete`, {});
      assert.equal(asked.status, 200);
      assert.match(asked.text, /Remove the webhook endpoint\?/);
      assert.match(asked.text, /name="confirm" value="yes"/);
      assert.ok(await endpoint());
      assert.equal(await evidence(), checked);

      const removed = await post(admin, `${PAGE}/delete`, { confirm: 'yes' });
      assert.equal(removed.status, 303);
      assert.equal(removed.location, PAGE);
      assert.equal(removed.notice, 'removed');
      assert.equal(await endpoint(), undefined);
      assert.equal(await evidence(), checked + 1);
      const entry = await lastEntry();
      assert.equal(entry.type, 'config.applied');
      assert.equal(entry.data.webhook, null);
      const page = await follow(admin, removed);
      assert.match(page.text, /Endpoint removed/);
      assert.match(page.text, /id="endpoint-state"><span class="status">none<\/span>/);
      assert.match(page.text, /status approved">delivered/, 'the log stays');
      assert.equal((await post(admin, `${PAGE}/rotate`, { confirm: 'yes' })).status, 404);
      assert.equal((await post(admin, `${PAGE}/delete`, { confirm: 'yes' })).status, 404);

      const count = receiver.received.length;
      await decided('approve');
      // The webhook worker has had a round after the decision and finished what it started.
      await t.settled();
      assert.equal(receiver.received.length, count, 'nothing is sent without an endpoint');
    });

    test('without ALLOW_PRIVATE_TARGETS a loopback URL is refused next to the field', async () => {
      const strict = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'false' } });
      try {
        const other = appClient(strict);
        const { workspace: ws, key: strictKey } = await strict.workspace({ config: WORKSPACE });
        const session = await other.signIn(ws, 'admin@acme.test');
        const verify = async () =>
          (await call(strict.url, 'GET', '/api/v1/audit/verify', { key: strictKey })).body.checked as number;
        const checked = await verify();
        const refused = await other.post(session, PAGE, { url: receiver.url });
        assert.equal(refused.status, 422);
        assert.match(
          refused.text,
          /id="w-url-error">resolves to an internal address \(loopback, private or link-local; see ALLOW_PRIVATE_TARGETS\)/,
        );
        assert.ok(refused.text.includes(`value="${receiver.url}"`), 'the form keeps the URL');
        assert.doesNotMatch(refused.text, /whsec_[A-Za-z0-9]/);
        assert.equal(await findWebhookEndpoint(strict.service.ctx.db, ws.id), undefined);
        assert.equal(await verify(), checked);
      } finally {
        await strict.close();
      }
    });
  });
}
