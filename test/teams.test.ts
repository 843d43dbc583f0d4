/**
 * Microsoft Teams end to end, on both backends, against a stand-in for the Bot Framework on loopback
 * (test/support/teams-connector.ts): a waiting hold's card goes to each approver mapped to a Teams
 * user; Approve and Reject pressed on it decide (four-eyes across people), every copy of the card is
 * updated on each change; badly signed, stale, replayed and foreign-tenant presses change nothing.
 */
import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { verifiedEvidence } from './support/app-client.ts';
import { type Backend, backends, sqlite } from './support/backends.ts';
import { call, submission } from './support/http.ts';
import { notificationsDone, startTestService, type TestService } from './support/service.ts';
import { startTeamsConnector, type TeamsConnector } from './support/teams-connector.ts';
import { until } from './support/wait.ts';

const ANN = '6b1f6c8e-33a5-4c3e-9d65-0d0f9c3c1a11';
const BOB = '0d6a1e52-8a1f-4a7e-b0f0-5e8c1d2b3c44';
const STRANGER = 'ffffffff-8a1f-4a7e-b0f0-5e8c1d2b3c44';

// Each request goes at once (no digest window): these tests are about the cards themselves.
const CONFIG = `
notifications: { digest_minutes: 0 }
members:
  - { email: admin@acme.test, name: Admin, role: admin }
  - { email: ann@acme.test, name: Ann, role: approver, teams_user_id: ${ANN}, channels: [teams] }
  - { email: bob@acme.test, name: Bob, role: approver, teams_user_id: ${BOB}, channels: [teams] }
tools: [{ connection: SDK, tool: pay, classification: approval }]
rules:
  - { name: Payments, tool: pay, effect: approval, approvers: [ann@acme.test, bob@acme.test], approvals_required: 2 }
`;

async function start(tc: TestContext, backend: Backend) {
  const teams = await startTeamsConnector();
  const t = await startTestService(backend, { env: { ...teams.env, NOTIFY_RETRY_SCALE: '0.001' } });
  tc.after(async () => {
    await t.close();
    await teams.close();
  });
  const { workspace, key } = await t.workspace({ config: CONFIG });
  return { t, teams, workspace, key };
}

async function submit(t: TestService, key: string, args: Record<string, unknown> = { amount: 1200 }) {
  const answer = await call(t.url, 'POST', '/api/v1/holds', {
    key,
    body: submission({ tool_name: 'pay', arguments: args }),
  });
  assert.equal(answer.body.status, 'pending', answer.text);
  return answer.body.id as string;
}

/** The card each member was sent for the hold, as it now is in Teams. */
async function cardsOf(t: TestService, teams: TeamsConnector, holdId: string) {
  const rows = await t.service.ctx.db.all<{ email: string; ref: string }>(
    `SELECT m.email, n.message_ref AS ref FROM notifications n JOIN members m ON m.id = n.member_id
     WHERE n.hold_id = $1 AND n.channel = 'teams' AND n.state = 'sent' ORDER BY m.email`,
    [holdId],
  );
  return Object.fromEntries(rows.map((row) => [row.email, teams.cardOf(JSON.parse(row.ref))]));
}

const textOf = (card: any) => JSON.stringify(card.body);
const verbsOf = (card: any) => (card.actions ?? []).map((action: any) => action.verb ?? action.title);

/** Presses a button as Teams would, signed as the Bot Connector signs. */
async function press(
  t: TestService,
  teams: TeamsConnector,
  invoke: Record<string, unknown>,
  sign: Parameters<TeamsConnector['signedActivity']>[1] = {},
) {
  const { headers, body } = teams.signedActivity(invoke, sign);
  const response = await fetch(`${t.url}/teams/messages`, { method: 'POST', headers, body });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

for (const backend of backends) {
  describe(`Microsoft Teams on ${backend.name}`, { skip: backend.skip }, () => {
    test('cards are sent, decided with their buttons, and updated on every change', async (tc) => {
      const { t, teams, workspace, key } = await start(tc, backend);
      const id = await submit(t, key);
      await notificationsDone(t);
      const created = teams.calls.filter((c) => c.kind === 'createConversation');
      assert.deepEqual(created.map((c) => c.body.members[0].id).sort(), [BOB, ANN].sort());
      assert.ok(created.every((c) => c.body.tenantId === teams.tenantId));
      let cards = await cardsOf(t, teams, id);
      assert.deepEqual(verbsOf(cards['ann@acme.test']), ['approve', 'reject', 'Open']);
      assert.match(textOf(cards['ann@acme.test']), /pay\(amount=1200\)/);

      const annPress = teams.invokeAction({
        verb: 'approve',
        holdId: id,
        aadObjectId: ANN,
        tenantId: teams.tenantId,
      });
      const answered = await press(t, teams, annPress);
      assert.equal(answered.status, 200);
      assert.equal(answered.body.type, 'application/vnd.microsoft.card.adaptive');
      assert.match(JSON.stringify(answered.body.value.body), /Recorded: 1 more approval is needed/);
      assert.equal(answered.body.value.actions, undefined);
      // A press delivered again changes nothing.
      const again = await press(t, teams, annPress);
      assert.equal(again.body.value, 'Already received.');
      await notificationsDone(t);
      cards = await cardsOf(t, teams, id);
      assert.match(textOf(cards['bob@acme.test']), /approved by Ann \(1 of 2\)/);
      // Updated in place: still open for Bob (its personal Open link is on the first version only).
      assert.deepEqual(verbsOf(cards['bob@acme.test']), ['approve', 'reject']);

      const bobPress = teams.invokeAction({
        verb: 'approve',
        holdId: id,
        aadObjectId: BOB,
        tenantId: teams.tenantId,
      });
      assert.equal((await press(t, teams, bobPress)).status, 200);
      const hold = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
      assert.deepEqual([hold.body.status, hold.body.decision.channel], ['approved', 'teams']);
      await notificationsDone(t);
      cards = await cardsOf(t, teams, id);
      for (const card of Object.values(cards)) {
        assert.match(textOf(card), /Approved.*\(via teams\)/);
        assert.deepEqual(verbsOf(card), []);
      }
      assert.ok(teams.calls.some((c) => c.kind === 'updateActivity'));
      await verifiedEvidence(t, key);
      const entries = await t.service.ctx.db.all<{ type: string; data: string }>(
        'SELECT type, data FROM evidence WHERE workspace_id = $1 ORDER BY seq',
        [workspace.id],
      );
      assert.deepEqual(
        entries
          .map((entry) => ({ type: entry.type, data: JSON.parse(entry.data) }))
          .filter((entry) => entry.data.hold === id)
          .map((entry) => [entry.type, entry.data.member?.email, entry.data.channel]),
        [
          ['hold.submitted', undefined, undefined],
          ['hold.approval_recorded', 'ann@acme.test', 'teams'],
          ['hold.approved', 'bob@acme.test', 'teams'],
        ],
      );
    });

    test('badly signed, stale, foreign and unmapped presses change nothing', async (tc) => {
      const { t, teams, key } = await start(tc, backend);
      const id = await submit(t, key);
      await notificationsDone(t);
      const invoke = (extra: Record<string, unknown> = {}) =>
        teams.invokeAction({
          verb: 'approve',
          holdId: id,
          aadObjectId: ANN,
          tenantId: teams.tenantId,
          ...extra,
        });
      const refused: [string, Parameters<TeamsConnector['signedActivity']>[1]][] = [
        ['another key', { otherKey: true }],
        ['another audience', { aud: 'someone-else' }],
        ['another issuer', { iss: 'https://evil.example' }],
        ['expired', { expiresIn: -600 }],
        ['not yet valid', { notBefore: 600 }],
        ['unsigned', { alg: 'none' }],
        ['HMAC with the public key', { alg: 'HS256' }],
        ['no header', { authorization: null }],
        ['garbage', { authorization: 'Bearer not.a.token' }],
        ['another service URL', { serviceUrl: 'https://elsewhere.example/teams/' }],
      ];
      for (const [what, sign] of refused) {
        const answer = await press(t, teams, invoke(), sign);
        assert.equal(answer.status, 401, what);
      }
      // Signed, but stale, or from another tenant, or from a Teams user no member is mapped to.
      const stale = await press(
        t,
        teams,
        invoke({ timestamp: new Date(Date.now() - 10 * 60_000).toISOString() }),
      );
      assert.equal(stale.body.value.code, 'stale');
      const foreign = await press(t, teams, invoke({ tenantId: '11111111-2222-3333-4444-555555555555' }));
      assert.equal(foreign.body.type, 'application/vnd.microsoft.error');
      const stranger = await press(
        t,
        teams,
        teams.invokeAction({ verb: 'approve', holdId: id, aadObjectId: STRANGER, tenantId: teams.tenantId }),
      );
      assert.equal(stranger.body.type, 'application/vnd.microsoft.error');
      const hold = await call(t.url, 'GET', `/api/v1/holds/${id}`, { key });
      assert.deepEqual([hold.body.status, hold.body.approvals.received], ['pending', 0]);
    });

    test('a hold whose arguments do not fit is only reviewed, never decided, from Teams', async (tc) => {
      const { t, teams, key } = await start(tc, backend);
      const id = await submit(t, key, { memo: 'x'.repeat(600) });
      await notificationsDone(t);
      const cards = await cardsOf(t, teams, id);
      assert.deepEqual(verbsOf(cards['ann@acme.test']), ['Review']);
      const answer = await press(
        t,
        teams,
        teams.invokeAction({ verb: 'approve', holdId: id, aadObjectId: ANN, tenantId: teams.tenantId }),
      );
      assert.equal(answer.body.value.code, 'review_required');
      assert.equal((await call(t.url, 'GET', `/api/v1/holds/${id}`, { key })).body.approvals.received, 0);
    });

    test('a send that fails is tried again until Teams takes it', async (tc) => {
      const { t, teams, key } = await start(tc, backend);
      teams.fail({ status: 503, times: 2 });
      const id = await submit(t, key);
      await until('both cards to be posted', async () =>
        Object.keys(await cardsOf(t, teams, id)).length === 2 ? true : undefined,
      );
    });
  });
}

test('without the Teams settings /teams/messages answers 404', async (tc) => {
  const t = await startTestService(sqlite);
  tc.after(() => t.close());
  const response = await fetch(`${t.url}/teams/messages`, {
    method: 'POST',
    body: '{}',
    headers: { 'content-type': 'application/json' },
  });
  assert.equal(response.status, 404);
});
