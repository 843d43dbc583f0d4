/** The app's live-update stream (/app/events) and the service's shutdown. */
import assert from 'node:assert/strict';
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
