/**
 * Issue 21: "after a restart of the upstream MCP server, resource subscriptions are renewed after a
 * reconnect". The proxy keeps one upstream subscription per URI for the 2025-era sessions that
 * subscribed (McpRelay.subscribe); UpstreamPool retries a lost upstream while sessions listen
 * (`wanted`) and subscribes again on each new connection (`subscriptionsOf`). Proved end to end, with
 * the official SDK client and a real upstream killed and started again on the same port:
 *
 * - the subscription is renewed on the connection the proxy opens for the next request after the
 *   restart, and updates reach the subscribed session again without it doing anything;
 * - the proxy reconnects by itself while a session is subscribed (no request needed), renewing it.
 *
 * Each session hears only the URI it subscribed to, before and after the restart.
 *
 * The upstream is @modelcontextprotocol/server-everything. It accepts a subscription to any URI, but
 * it sends `notifications/resources/updated` (for every URI its session is subscribed to) only to an
 * upstream session that turned them on with its tool `toggle-subscriber-updates`: once at once, then
 * every 5 s, a pace no environment variable or argument changes. The proxy shares one upstream
 * session among its clients, and a restart forgets the toggle, so a second session (the "operator")
 * turns the updates on again after the restart. The subscribed session sends nothing after it
 * subscribed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { backends } from './support/backends.ts';
import { type EverythingUpstream, startEverything } from './support/mcp-upstream.ts';
import { startTestService, type TestService } from './support/service.ts';
import { until } from './support/wait.ts';

const ADMIN = 'members:\n  - { email: admin@acme.test, name: Admin, role: admin }\n';
const SUBSCRIBER_URI = 'demo://resource/static/document/architecture.md';
const OPERATOR_URI = 'demo://resource/static/document/features.md';
/** Updates come every 5 s once turned on; a busy 2-core machine gets three times that and more. */
const UPDATE_WAIT_MS = 20_000;
/** The pool retries a lost upstream after 2 s, then 4 s, 8 s...: room for a few rounds. */
const RECONNECT_WAIT_MS = 30_000;

interface Session {
  client: Client;
  /** The URI of every `notifications/resources/updated` it received, oldest first. */
  updates: string[];
}

for (const backend of backends) {
  describe(`MCP subscriptions on ${backend.name}`, { skip: backend.skip, timeout: 180_000 }, () => {
    let t: TestService;
    const clients: Client[] = [];

    before(async () => {
      t = await startTestService(backend, { env: { ALLOW_PRIVATE_TARGETS: 'true' } });
    });
    after(async () => {
      await Promise.all(clients.map((client) => client.close().catch(() => {})));
      await t?.close();
    });

    /**
     * A workspace of its own on an upstream of its own: the only client of that upstream is then
     * this workspace's connection in the proxy, so a new session there is the proxy reconnecting.
     */
    async function setUp() {
      const everything = await startEverything();
      const { key } = await t.workspace({
        config:
          `${ADMIN}mcp_servers:\n  - { slug: every, name: Everything, url: "${everything.url}" }\n` +
          'tools:\n  - { connection: Everything, tool: toggle-subscriber-updates, classification: allow }\n',
      });
      // A 2025-era session (with its GET stream): subscriptions are offered to those only.
      const connect = async (): Promise<Session> => {
        const client = new Client(
          { name: 'subscriptions-test', version: '1' },
          { versionNegotiation: { mode: 'legacy' } },
        );
        const updates: string[] = [];
        client.setNotificationHandler(
          'notifications/resources/updated',
          (n) => void updates.push(n.params.uri),
        );
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${t.url}/mcp/every`), {
            requestInit: { headers: { Authorization: `Bearer ${key}` } },
          }),
        );
        clients.push(client);
        return { client, updates };
      };
      const subscriber = await connect();
      const operator = await connect();
      await subscriber.client.subscribeResource({ uri: SUBSCRIBER_URI });
      await operator.client.subscribeResource({ uri: OPERATOR_URI });
      return { everything, subscriber, operator };
    }

    const toggleUpdates = (operator: Session) =>
      operator.client.callTool({ name: 'toggle-subscriber-updates', arguments: {} });

    /** Waits for an update to arrive at the session past the first `seen` it had. */
    const updateAfter = (session: Session, seen: number, what: string) =>
      until(what, () => (session.updates.length > seen ? true : undefined), UPDATE_WAIT_MS);

    /**
     * Updates flow (each session hears its own URI), then stop: the updates counted afterwards can
     * only come from the restarted upstream.
     */
    async function updatesBeforeRestart(subscriber: Session, operator: Session) {
      await toggleUpdates(operator);
      await updateAfter(subscriber, 0, 'an update for the subscriber before the restart');
      await updateAfter(operator, 0, 'an update for the operator before the restart');
      await toggleUpdates(operator);
      return [subscriber.updates.length, operator.updates.length] as const;
    }

    /** What the restarted upstream printed since it started: it logs each session it opens. */
    const sinceRestart = (everything: EverythingUpstream) => {
      const output = everything.output();
      return output.slice(Math.max(0, output.lastIndexOf('Starting Streamable HTTP server')));
    };

    /** A failure, with what the upstream printed (which sessions it opened, which requests it got). */
    const withUpstreamOutput = (error: unknown, everything: EverythingUpstream) =>
      new Error(`${(error as Error).message}\nupstream output:\n${everything.output()}`, { cause: error });

    function assertOwnUris(subscriber: Session, operator: Session) {
      assert.deepEqual(
        new Set(subscriber.updates),
        new Set([SUBSCRIBER_URI]),
        'the subscriber hears its URI only',
      );
      assert.deepEqual(new Set(operator.updates), new Set([OPERATOR_URI]), 'the operator hears its URI only');
    }

    test('renewed on the connection the next request opens: the subscribed session does nothing', async () => {
      const { everything, subscriber, operator } = await setUp();
      try {
        const [subscriberSaw, operatorSaw] = await updatesBeforeRestart(subscriber, operator);
        await everything.stop();
        await everything.start();
        // The proxy's upstream session died with the old process. This call, sent at once, finds it
        // gone: the proxy connects again, renews both subscriptions, then sends the call there.
        await toggleUpdates(operator);
        await updateAfter(subscriber, subscriberSaw, 'an update for the subscriber after the restart');
        await updateAfter(operator, operatorSaw, 'an update for the operator after the restart');
        assertOwnUris(subscriber, operator);
      } catch (error) {
        throw withUpstreamOutput(error, everything);
      } finally {
        await everything.stop();
      }
    });

    test('while a session is subscribed, the proxy reconnects by itself and renews it', async () => {
      const { everything, subscriber, operator } = await setUp();
      try {
        const [subscriberSaw, operatorSaw] = await updatesBeforeRestart(subscriber, operator);
        await everything.stop();
        await everything.start();
        // Nobody sends anything: a subscription is waiting on the upstream, so the proxy itself must
        // notice the restart and open a new upstream session (the upstream logs each one it opens).
        await until(
          'the proxy to open a new upstream session by itself after the restart',
          () => (/Session initialized with ID/.test(sinceRestart(everything)) ? true : undefined),
          RECONNECT_WAIT_MS,
        );
        // Only now a request: the restarted upstream forgot the toggle (see the header).
        await toggleUpdates(operator);
        await updateAfter(subscriber, subscriberSaw, 'an update for the subscriber after the restart');
        await updateAfter(operator, operatorSaw, 'an update for the operator after the restart');
        assertOwnUris(subscriber, operator);
      } catch (error) {
        throw withUpstreamOutput(error, everything);
      } finally {
        await everything.stop();
      }
    });
  });
}
