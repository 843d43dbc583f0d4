/** The app's live-update stream (/app/events) and the service's shutdown. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { sqlite } from './support/backends.ts';
import { appClient } from './support/app-client.ts';
import { startTestService, type TestService } from './support/service.ts';

test('a live stream opened while the service stops ends at once, and the stop completes', async () => {
  let t: TestService | undefined = await startTestService(sqlite);
  try {
    const { workspace } = await t.workspace();
    const session = await appClient(() => t!).signIn(workspace, 'admin@acme.test');
    // The moment of a browser reconnecting after its stream was ended by the stop.
    t.service.ctx.holdEvents.close();
    const answer = await fetch(`${t.url}/app/events`, {
      headers: { cookie: `approvals_session=${session.cookie}` },
      signal: AbortSignal.timeout(5_000),
    });
    assert.equal(answer.status, 200);
    // The body ends instead of staying open (a hung stream would hit the 5 s abort above).
    assert.match(await answer.text(), /^retry: 3000/);
    await t.close();
    t = undefined;
  } finally {
    await t?.close();
  }
});

test(
  'a stream open when the service stops: its connection is closed, not left idle to hold the stop',
  { timeout: 20_000 },
  async () => {
    let t: TestService | undefined = await startTestService(sqlite);
    const agent = new http.Agent({ keepAlive: true });
    try {
      const { workspace } = await t.workspace();
      const session = await appClient(() => t!).signIn(workspace, 'admin@acme.test');
      const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
        http
          .get(
            `${t!.url}/app/events`,
            { agent, headers: { cookie: `approvals_session=${session.cookie}` } },
            resolve,
          )
          .on('error', reject);
      });
      assert.equal(response.statusCode, 200);
      const socketClosed = once(response.socket, 'close');
      response.resume();
      // A browser keeps the connection of an ended stream for reuse; the stop must not wait on it.
      // The server's keep-alive timeout is 72 s: a connection left idle would outlive this test's 20 s.
      await Promise.all([t.close(), socketClosed]);
      t = undefined;
    } finally {
      agent.destroy();
      await t?.close();
    }
  },
);

test(
  "a connection that never sent a request (a browser's preconnect) does not hold the stop",
  { timeout: 20_000 },
  async () => {
    const t = await startTestService(sqlite);
    const { port } = new URL(t.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    const socketClosed = once(socket, 'close');
    socket.resume();
    // Node's server treats such a connection as neither idle nor busy, and its request timeout is
    // 300 s: without the service closing it, this stop would outlive the test's 20 s.
    await Promise.all([t.close(), socketClosed]);
  },
);
