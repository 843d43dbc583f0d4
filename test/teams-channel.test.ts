/**
 * The Teams channel's building blocks against a stand-in for Microsoft's side (test/support/teams-connector.ts):
 * the Bot Connector client (token once, proactive 1:1 chat, post, update, failures), the check of the
 * JWT the Bot Connector signs requests with (every forged or stale variant refused), and the reading of
 * an Approve or Reject pressed on a card.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readTeamsAction, teamsClient, teamsVerifier, type TeamsCard } from '../src/channels/teams.ts';
import { httpClient } from '../src/net/http-client.ts';
import { startTeamsConnector, type TeamsConnector } from './support/teams-connector.ts';

const card = (text: string): TeamsCard => ({
  type: 'AdaptiveCard',
  version: '1.4',
  body: [{ type: 'RichTextBlock', inlines: [{ type: 'TextRun', text }] }],
});

const USER = '6b1f6c8e-33a5-4c3e-9d65-0d0f9c3c1a11';
const http = httpClient({ allowPrivate: true });
let teams: TeamsConnector;

before(async () => {
  teams = await startTeamsConnector();
});
after(async () => {
  await teams.close();
  await http.close();
});

/** A client of the stand-in on a clock the test moves. */
function client(clock = { now: Date.now() }, password = teams.appPassword) {
  return teamsClient({
    appId: teams.appId,
    appPassword: password,
    tenantId: teams.tenantId,
    serviceUrl: teams.serviceUrl,
    tokenUrl: teams.tokenUrl,
    http,
    now: () => clock.now,
  });
}

const count = (kind: string, since: number) => teams.calls.slice(since).filter((c) => c.kind === kind).length;

describe('Teams client', () => {
  test('a post to a person opens the 1:1 chat, then posts the card; the token is fetched once', async () => {
    const start = teams.calls.length;
    const teamsApi = client();
    const posted = await teamsApi.post({ userId: USER }, card('first'));
    assert.equal(posted.serviceUrl, teams.serviceUrl);
    assert.match(posted.conversationId, /^a:/);
    const calls = teams.calls.slice(start);
    assert.deepEqual(
      calls.map((c) => `${c.kind} ${c.status}`),
      ['token 200', 'createConversation 201', 'postActivity 201'],
    );
    const form = new URLSearchParams(calls[0]!.raw);
    assert.equal(form.get('grant_type'), 'client_credentials');
    assert.equal(form.get('scope'), 'https://api.botframework.com/.default');
    assert.deepEqual(calls[1]!.body, {
      bot: { id: `28:${teams.appId}` },
      members: [{ id: USER }],
      tenantId: teams.tenantId,
      channelData: { tenant: { id: teams.tenantId } },
      isGroup: false,
    });
    assert.equal(calls[2]!.body.type, 'message');
    assert.equal(calls[2]!.body.attachments[0].contentType, 'application/vnd.microsoft.card.adaptive');
    assert.deepEqual(teams.cardOf(posted), card('first'));

    // The same person again: the same chat; the token is reused, and the update is a PUT.
    const again = await teamsApi.post({ userId: USER }, card('second'));
    assert.equal(again.conversationId, posted.conversationId);
    await teamsApi.update(posted, card('decided'));
    assert.deepEqual(teams.cardOf(posted), card('decided'));
    assert.deepEqual(teams.cardOf(again), card('second'));
    const update = teams.calls.at(-1)!;
    assert.equal(update.method, 'PUT');
    assert.equal(update.kind, 'updateActivity');
    assert.equal(update.body.id, posted.activityId);
    assert.equal(count('token', start), 1);
    const bearers = new Set(
      teams.calls
        .slice(start)
        .filter((c) => c.kind !== 'token')
        .map((c) => c.headers.authorization),
    );
    assert.equal(bearers.size, 1);
  });

  test('a post to a channel makes a new conversation (its thread) with the card; an update goes to that thread', async () => {
    const start = teams.calls.length;
    const channelId = '19:LydFnezGKSkhYoiLNP6kZ8AuXQr36EDAkvG9CNJSPKc1@thread.tacv2';
    const teamsApi = client();
    const posted = await teamsApi.post({ channelId }, card('channel'));
    assert.equal(posted.conversationId, `${channelId};messageid=${posted.activityId}`);
    const calls = teams.calls.slice(start);
    assert.deepEqual(
      calls.map((c) => `${c.kind} ${c.status}`),
      ['token 200', 'createConversation 201'],
    );
    assert.deepEqual(calls[1]!.body, {
      isGroup: true,
      bot: { id: `28:${teams.appId}` },
      tenantId: teams.tenantId,
      channelData: { channel: { id: channelId }, tenant: { id: teams.tenantId } },
      activity: {
        type: 'message',
        attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', content: card('channel') }],
      },
    });
    assert.deepEqual(teams.cardOf(posted), card('channel'));

    await teamsApi.update(posted, card('decided'));
    assert.deepEqual(teams.cardOf(posted), card('decided'));
    // The thread's id (`;messageid=…`) is one path segment.
    const update = teams.calls.at(-1)!;
    assert.equal(`${update.kind} ${update.status}`, 'updateActivity 200');
    assert.ok(!update.path.includes(';'), update.path);
  });

  test('the token is fetched again shortly before it expires, and after the connector refuses it', async () => {
    const clock = { now: Date.now() };
    const teamsApi = client(clock);
    const start = teams.calls.length;
    const posted = await teamsApi.post({ userId: USER }, card('a'));
    clock.now += 50 * 60_000;
    await teamsApi.update(posted, card('b'));
    assert.equal(count('token', start), 1, 'still valid for 10 minutes');
    clock.now += 6 * 60_000;
    await teamsApi.update(posted, card('c'));
    assert.equal(count('token', start), 2, 'renewed five minutes before it expires');

    teams.revokeTokens();
    await assert.rejects(teamsApi.update(posted, card('d')), { message: 'Teams update: HTTP 401' });
    await teamsApi.update(posted, card('e'));
    assert.equal(count('token', start), 3);
    assert.deepEqual(teams.cardOf(posted), card('e'));
  });

  test('requests running together share one token request', async () => {
    const start = teams.calls.length;
    const teamsApi = client();
    await Promise.all([1, 2, 3, 4].map((n) => teamsApi.post({ userId: USER }, card(`n${n}`))));
    assert.equal(count('token', start), 1);
  });

  test('failures reject with the status only, never what was sent; the next attempt goes through', async () => {
    const secret = 'Approve [here](https://evil.test) IBAN MT84MALT011000012345MTLCAST001S';
    const teamsApi = client();
    teams.fail({ status: 500, times: 2 });
    for (const attempt of [1, 2]) {
      const error = await teamsApi.post({ userId: USER }, card(secret)).then(
        () => assert.fail(`attempt ${attempt} succeeded`),
        (e: Error) => e,
      );
      assert.match(error.message, /^Teams (token|create conversation): HTTP 500 ServiceError$/);
    }
    const posted = await teamsApi.post({ userId: USER }, card(secret));
    assert.deepEqual(teams.cardOf(posted), card(secret));

    teams.notInstalled.add('00000000-0000-0000-0000-00000000dead');
    await assert.rejects(teamsApi.post({ userId: '00000000-0000-0000-0000-00000000dead' }, card(secret)), {
      message: 'Teams create conversation: HTTP 403 Forbidden',
    });
    await assert.rejects(teamsApi.update({ ...posted, activityId: '1:nope' }, card(secret)), {
      message: 'Teams update: HTTP 404 ActivityNotFoundInConversation',
    });
    await assert.rejects(client(undefined, 'wrong-password').post({ userId: USER }, card(secret)), {
      message: 'Teams token: HTTP 401 invalid_client',
    });
    teams.fail({ status: 503, times: 1, what: 'token' });
    await assert.rejects(client().post({ userId: USER }, card(secret)), /^Error: Teams token: HTTP 503/);
    teams.recover();
  });

  test('an unreachable connector rejects without the request in the message', async () => {
    const gone = teamsClient({
      appId: teams.appId,
      appPassword: teams.appPassword,
      tenantId: teams.tenantId,
      serviceUrl: 'http://127.0.0.1:1/teams/',
      tokenUrl: 'http://127.0.0.1:1/token',
      http,
    });
    const error = await gone.post({ userId: USER }, card('x')).catch((e: Error) => e);
    assert.ok(error instanceof Error);
    assert.doesNotMatch(error.message, new RegExp(teams.appPassword));
  });
});

describe('Teams verifier', () => {
  const clock = { now: Date.now() };
  let verifier: ReturnType<typeof teamsVerifier>;
  const activity = () => teams.invokeAction({ verb: 'approve', holdId: 'svc_pa_1', aadObjectId: USER });
  /** What `verify` says of `activity` signed with `options`, checked against `checked` (the same unless given). */
  const check = (options: Parameters<TeamsConnector['signedActivity']>[1] = {}, checked?: object) => {
    const sent = activity();
    const { headers } = teams.signedActivity(sent, { now: clock.now, ...options });
    return verifier.verify(headers.authorization, (checked ?? sent) as { serviceUrl?: unknown });
  };

  before(() => {
    verifier = teamsVerifier({
      appId: teams.appId,
      openIdMetadataUrl: teams.openIdMetadataUrl,
      http,
      now: () => clock.now,
    });
  });

  test('accepts a token the Bot Connector signed for this app and activity; keys fetched once', async () => {
    const start = teams.calls.length;
    for (let i = 0; i < 5; i++)
      assert.deepEqual(await check(), { appId: teams.appId, serviceUrl: teams.serviceUrl });
    assert.equal(count('metadata', start), 1);
    assert.equal(count('keys', start), 1);
    // Within the five minutes' skew either side.
    assert.ok(await check({ expiresIn: -240 }));
    assert.ok(await check({ notBefore: 240 }));
  });

  test('refuses every forged, stale or misdirected token', async () => {
    const sent = activity();
    const variants: [string, Promise<unknown>][] = [
      ['signed with another key', check({ otherKey: true })],
      ['an unknown kid', check({ kid: 'not-a-key' })],
      ['no serviceurl claim', check({ serviceUrl: null })],
      ['for another app', check({ aud: 'another-app' })],
      ['another issuer', check({ iss: 'https://evil.test' })],
      ['expired', check({ expiresIn: -600 })],
      ['no exp', check({ expiresIn: null })],
      ['nbf in the future', check({ notBefore: 600 })],
      ['alg none', check({ alg: 'none' })],
      ['HS256 with the public key as secret', check({ alg: 'HS256' })],
      ['endorsed for msteams, sent as webchat', check({}, { ...sent, channelId: 'webchat' })],
      ['no channelId', check({}, { ...sent, channelId: undefined })],
      ['serviceUrl claim of another service', check({ serviceUrl: 'https://evil.test/teams/' })],
      ['activity naming another service', check({}, { ...sent, serviceUrl: 'https://evil.test/teams/' })],
      ['no header', check({ authorization: null })],
      ['another scheme', check({ authorization: 'Basic dXNlcjpwYXNz' })],
      ['garbage', check({ authorization: 'Bearer not.a.token!' })],
      ['two parts', check({ authorization: 'Bearer abc.def' })],
      ['undecodable parts', check({ authorization: 'Bearer e30.e30.e30' })],
      ['empty', check({ authorization: '' })],
    ];
    for (const [what, verdict] of variants) assert.equal(await verdict, null, what);
    // Swapped claims under a valid signature: the signature no longer covers them.
    const { token } = teams.signedActivity(sent, { now: clock.now });
    const [head, , signature] = token.split('.');
    const forged = Buffer.from(
      JSON.stringify({ iss: 'https://api.botframework.com', aud: teams.appId, exp: 9e9 }),
    );
    assert.equal(
      await verifier.verify(`Bearer ${head}.${forged.toString('base64url')}.${signature}`, sent as never),
      null,
    );
  });

  test('a new key is fetched for an unknown kid at most every few minutes, and all keys after a day', async () => {
    const start = teams.calls.length;
    teams.rotateKey();
    // Fetched once for the unknown kid (more than five minutes after the last fetch) ...
    clock.now += 6 * 60_000;
    assert.ok(await check());
    assert.equal(count('keys', start), 1);
    // ... and not for each unknown kid that follows within the next minutes.
    for (let i = 0; i < 3; i++) assert.equal(await check({ kid: `unknown-${i}` }), null);
    assert.equal(count('keys', start), 1);
    // After a day, even a known kid's keys are read again (a key Microsoft withdrew stops working).
    clock.now += 25 * 3_600_000;
    assert.ok(await check());
    assert.equal(count('keys', start), 2);
  });

  test('keys that cannot be fetched reject (answer 503), the token is not taken as bad', async () => {
    const fresh = teamsVerifier({
      appId: teams.appId,
      openIdMetadataUrl: teams.openIdMetadataUrl,
      http,
      now: () => clock.now,
    });
    teams.fail({ what: 'keys', status: 500, times: 1 });
    const sent = activity();
    const { headers } = teams.signedActivity(sent, { now: clock.now });
    await assert.rejects(
      fresh.verify(headers.authorization, sent as never),
      /Teams OpenID metadata: HTTP 500/,
    );
    assert.ok(await fresh.verify(headers.authorization, sent as never));
    teams.recover();
  });
});

test('readTeamsAction: Approve or Reject on a hold, pressed in Teams; anything else is null', () => {
  const invoke = teams.invokeAction({
    verb: 'reject',
    holdId: 'svc_pa_0123456789abcdefghijkl',
    aadObjectId: USER,
    conversationId: 'a:chat',
    replyToId: '1:card',
    timestamp: '2026-05-01T12:00:00.000Z',
  });
  assert.deepEqual(readTeamsAction(invoke), {
    verb: 'reject',
    holdId: 'svc_pa_0123456789abcdefghijkl',
    aadObjectId: USER,
    activityId: invoke.id,
    replyToId: '1:card',
    conversationId: 'a:chat',
    tenantId: teams.tenantId,
    timestamp: Date.UTC(2026, 4, 1, 12),
  });
  const value = invoke.value as any;
  for (const [what, activity] of [
    ['another verb', { ...invoke, value: { action: { ...value.action, verb: 'delete' } } }],
    ['no hold', { ...invoke, value: { action: { ...value.action, data: {} } } }],
    [
      'a hold id that is not one',
      { ...invoke, value: { action: { ...value.action, data: { hold: '../x' } } } },
    ],
    ['Action.Submit', { ...invoke, value: { action: { ...value.action, type: 'Action.Submit' } } }],
    ['another invoke', { ...invoke, name: 'composeExtension/query' }],
    ['a message', { ...invoke, type: 'message' }],
    ['another channel', { ...invoke, channelId: 'webchat' }],
    ['no AAD object id', { ...invoke, from: { id: '29:x' } }],
    ['no conversation', { ...invoke, conversation: undefined }],
    ['not an object', 'invoke'],
  ] as const)
    assert.equal(readTeamsAction(activity), null, what);
});
