/**
 * Issue 37, part 4: open client registration (RFC 7591) is open to anyone, so what it keeps is bounded.
 * It kept a 16 KB registration for 30 days and let one address register 119 of 125 clients in a burst.
 * Now a registration is at most 4 KB, one never used expires 24 hours after it was made (refused at once,
 * deleted by the sweep), and an address keeps at most 20 registrations never used: past that it gets
 * RFC 7591's error shape, and nothing is stored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { appClient } from './support/app-client.ts';
import { backends } from './support/backends.ts';
import { oauthClient, REDIRECT_URI } from './support/oauth-client.ts';
import { startTestService, type TestService } from './support/service.ts';

const CONFIG = `members:
  - { email: admin@acme.test, name: Admin, role: admin }
mcp_servers:
  - { slug: rec, name: Recorder, url: "http://127.0.0.1:9/mcp" }
`;
const HOUR = 3_600_000;

for (const backend of backends) {
  describe(`open client registration on ${backend.name}`, { skip: backend.skip }, () => {
    let t: TestService;
    before(async () => {
      // Addresses are told apart through X-Forwarded-For, as behind a proxy.
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true', TRUST_PROXY: 'true' } });
    });
    after(() => t?.close());

    /** A registration from `address`; the rate limit (120 a minute) is kept out of the way. */
    const register = async (address: string, metadata: Record<string, unknown> = {}) => {
      const response = await fetch(`${t.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify({
          client_name: 'Test assistant',
          redirect_uris: [REDIRECT_URI],
          token_endpoint_auth_method: 'none',
          ...metadata,
        }),
      });
      return {
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
        body: (await response.json()) as { client_id?: string; error?: string; error_description?: string },
      };
    };
    const clientsKept = async () =>
      Number(
        (await t.service.ctx.db.one<{ n: number }>(
          "SELECT COUNT(*) AS n FROM oauth_records WHERE model = 'Client'",
        ))!.n,
      );

    const stored = async (clientId: string) =>
      Number(
        (await t.service.ctx.db.one<{ n: number }>(
          "SELECT COUNT(*) AS n FROM oauth_records WHERE model = 'Client' AND client_id = $1",
          [clientId],
        ))!.n,
      );

    test('a registration of more than 4 KB is refused before it is read', async () => {
      const before = await clientsKept();
      const large = await register('198.51.100.1', { client_name: 'x'.repeat(5_000) });
      assert.equal(large.status, 413);
      assert.equal(large.body.error, 'invalid_request');
      assert.equal(await clientsKept(), before);
      assert.equal((await register('198.51.100.1', { client_name: 'x'.repeat(1_000) })).status, 201);
    });

    test('a registration never used expires after 24 hours: refused at once, then deleted; one in use stays', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const admin = await appClient(t).signIn(workspace, 'admin@acme.test');
      const oauth = oauthClient(t.url);
      const resource = `${t.url}/mcp/${workspace.slug}/rec`;
      const unused = (await register('198.51.100.2')).body.client_id!;
      const { clientId: used } = await oauth.connect(admin, resource);
      await t.clock.advance(23 * HOUR);
      assert.equal((await oauth.authorize(unused, resource)).status, 303, 'still there within the day');
      // Past the day, before any sweep: refused already.
      await t.clock.advance(2 * HOUR, { runWorkers: false });
      const gone = await oauth.authorize(unused, resource);
      assert.equal(gone.status, 400);
      assert.match(gone.text, /invalid_client/);
      // The sweep deletes it; the client a member allowed stays, and works.
      assert.equal(await stored(unused), 1, 'not swept yet');
      await t.clock.runWorkers();
      assert.equal(await stored(unused), 0);
      assert.equal(await stored(used), 1);
      assert.equal((await oauth.authorize(used, resource)).status, 303);
      await t.clock.advance(31 * 24 * HOUR);
      assert.equal((await oauth.authorize(used, resource)).status, 303, 'in use a month later');
    });

    test('an address keeps at most 20 registrations never used; past that RFC 7591 error, nothing stored', async () => {
      const { workspace } = await t.workspace({ config: CONFIG });
      const admin = await appClient(t).signIn(workspace, 'admin@acme.test');
      const oauth = oauthClient(t.url);
      const resource = `${t.url}/mcp/${workspace.slug}/rec`;
      const address = '203.0.113.7';
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const answer = await register(address);
        assert.equal(answer.status, 201, `registration ${i + 1}: ${JSON.stringify(answer.body)}`);
        ids.push(answer.body.client_id!);
      }
      const before = await clientsKept();
      const refused = await register(address);
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error, 'too_many_registrations');
      assert.match(refused.body.error_description!, /20 client registrations never used/);
      assert.ok(Number(refused.retryAfter) > 0 && Number(refused.retryAfter) <= 24 * 3600);
      assert.equal(await clientsKept(), before, 'nothing stored');
      // Another address is not held up.
      assert.equal((await register('203.0.113.8')).status, 201);
      // A registration a member allowed is in use: it frees a place.
      const auth = await oauth.authorize(ids[0]!, resource);
      const { query } = await oauth.decide(auth, admin, 'allow');
      assert.equal((await oauth.exchange(auth, query!, ids[0]!, resource)).status, 200);
      assert.equal((await register(address)).status, 201);
      assert.equal((await register(address)).status, 429);
      // A day later the unused ones are gone, and so is the bound they made.
      await t.clock.advance(25 * HOUR);
      assert.equal((await register(address)).status, 201);
    });

    test('80 registrations at once from one address: exactly 20 are kept, the rest refused', async () => {
      const address = '203.0.113.60';
      const answers = await Promise.all(Array.from({ length: 80 }, () => register(address)));
      const made = answers.filter((answer) => answer.status === 201);
      const refused = answers.filter((answer) => answer.status === 429);
      assert.equal(made.length, 20, answers.map((answer) => answer.status).join(' '));
      assert.equal(refused.length, 60);
      for (const answer of refused) {
        assert.equal(answer.body.error, 'too_many_registrations');
        assert.ok(Number(answer.retryAfter) > 0, `Retry-After: ${answer.retryAfter}`);
      }
      const kept = await t.service.ctx.db.one<{ n: number }>(
        "SELECT COUNT(*) AS n FROM oauth_records WHERE model = 'Client' AND registered_from = $1",
        [address],
      );
      assert.equal(Number(kept!.n), 20);
    });

    test('registrations from two addresses at once are each counted for their own address', async () => {
      // SQLite runs transactions begun together in one batch: each client must keep its own address.
      const [a, b] = ['203.0.113.70', '203.0.113.71'];
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => register(i % 2 ? b : a).then((answer) => answer.status)),
      );
      assert.equal(answers.filter((status) => status === 201).length, 40, answers.join(' '));
      for (const address of [a, b]) {
        const kept = await t.service.ctx.db.one<{ n: number }>(
          "SELECT COUNT(*) AS n FROM oauth_records WHERE model = 'Client' AND registered_from = $1",
          [address],
        );
        assert.equal(Number(kept!.n), 20, address);
      }
    });

    test('authorization requests from one address: 20 a minute, then 429 with Retry-After; another address goes on', async () => {
      const authorize = (address: string) =>
        fetch(`${t.url}/oauth/authorize?client_id=unknown&response_type=code`, {
          headers: { 'x-forwarded-for': address },
          redirect: 'manual',
        });
      const address = '198.51.100.20';
      for (let i = 0; i < 20; i++) {
        const answer = await authorize(address);
        await answer.body?.cancel();
        assert.notEqual(answer.status, 429, `request ${i + 1}`);
      }
      const refused = await authorize(address);
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      assert.equal(((await refused.json()) as { error: string }).error, 'rate_limited');
      const other = await authorize('198.51.100.21');
      await other.body?.cancel();
      assert.notEqual(other.status, 429);
    });

    test('IPv6 addresses count by their /64: a network shares one bound, the next network has its own', async () => {
      // One attacker with a /64 can send from 2^64 addresses: they count as one.
      for (let i = 1; i <= 20; i++)
        assert.equal((await register(`2001:db8:5:6::${i.toString(16)}`)).status, 201, `registration ${i}`);
      const refused = await register('2001:db8:5:6:ffff:ffff:ffff:fffe');
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error, 'too_many_registrations');
      assert.ok(Number(refused.retryAfter) > 0);
      // The neighbouring /64 is someone else; IPv4 addresses stay one each.
      assert.equal((await register('2001:db8:5:7::1')).status, 201);
      assert.equal((await register('203.0.113.61')).status, 201);
    });
  });
}
