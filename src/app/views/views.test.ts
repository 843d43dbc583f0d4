import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approversInWords, decisionCapacity, type Decider, fourEyesLine } from '../../domain/four-eyes.ts';
import { relativeText, utcText } from '../../domain/time-text.ts';
import { argumentsView } from './arguments.ts';
import { conditionsInWords, conditionsView, heldArguments } from './conditions.ts';
import { blockerInWords, decidedInWords, fourEyesView } from './four-eyes.ts';

const SCRIPT = '<script>alert(1)</script>';
const IMG = '"><img src=x onerror=alert(2)>';
/** Bidi override and zero-width space: text that reads other than it is. */
const HIDDEN = 'evil\u202Egnp.exe\u200B';

/** No markup of the fixtures' own survives: every tag and attribute quote was escaped. */
function assertInert(markup: string) {
  assert.doesNotMatch(markup, /<script|<img|onerror=alert\(2\)>/);
  assert.doesNotMatch(markup, /[\u202E\u200B]/);
}

const IBAN = 'DE44500105175407324931';

test('arguments: every value is on the page whole, escaped, hidden characters shown escaped', () => {
  const args = { [`k${SCRIPT}`]: `${SCRIPT}${IMG}`, payee: { iban: IBAN, name: HIDDEN }, n: 4200 };
  const out = argumentsView(args).toString();
  assertInert(out);
  assert.match(out, new RegExp(IBAN));
  assert.match(out, /evil\\u202egnp\.exe\\u200b/);
  assert.match(out, /&lt;script&gt;/);
  assert.match(out, /<details open>/);
});

test('arguments: the values a condition looked at are marked, and every level is open', () => {
  const deep = { a: { b: { c: { amount: 4200 } } }, other: { x: { y: { z: 1 } } } };
  const out = argumentsView(deep, { highlight: ['a.b.c.amount'] }).toString();
  assert.match(
    out,
    /<li class="held">\s*<span class="key">amount<\/span>: <mark><span class="value number">4200<\/span><\/mark>/,
  );
  // a.b.c is as deep as other.x.y: both are open, no value waits behind a closed level (issue 37).
  assert.equal(out.match(/<details open>/g)!.length, 6);
  assert.equal(out.match(/<details >/g), null);
});

test('arguments: huge arguments are bounded, say what they left out and link to the full JSON', () => {
  const huge = {
    memo: 'x'.repeat(1_000_000),
    items: Array.from({ length: 10_000 }, (_, i) => ({ i, note: SCRIPT })),
  };
  const out = argumentsView(huge, {
    budget: 5_000,
    fullJsonHref: '/app/holds/svc_pa_x/arguments.json',
  }).toString();
  assert.ok(out.length < 60_000, `${out.length} characters`);
  assertInert(out);
  // Every line first (the memo's beginning and length, some items), then the room left for the memo.
  assert.match(out, /1,000,002 characters/);
  assert.match(out, /… 99\d,\d{3} more characters in the full JSON/);
  assert.match(out, /19,\d{3} values and 99\d,\d{3} characters left out here/);
  assert.match(out, /<a href="\/app\/holds\/svc_pa_x\/arguments.json" download>Download the full JSON<\/a>/);
  // Many tiny fields are bounded too.
  const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`f${i}`, i]));
  assert.ok(argumentsView(wide, { budget: 5_000 }).toString().length < 60_000);
});

test('arguments: empty objects, arrays and no arguments', () => {
  assert.match(argumentsView({}).toString(), /No arguments/);
  const out = argumentsView({ a: {}, b: [] }).toString();
  assert.match(out, /<span class="key">a<\/span>: <span class="value">\{\}<\/span>/);
  assert.match(out, /<span class="key">b<\/span>: <span class="value">\[\]<\/span>/);
});

test('conditions in words: each operator, a type mismatch, a frequency and a classification', () => {
  const facts = {
    conditions: [
      { arg: 'amount', op: 'gt' as const, value: 1000, actual: 4200 },
      { arg: 'currency', op: 'eq' as const, value: 'EUR', actual: 'EUR' },
      { arg: 'payee.country', op: 'not_in' as const, value: ['DE', 'FR'], actual: 'KY' },
      { arg: 'memo', op: 'exists' as const, value: null, actual: 'x' },
      {
        arg: 'total',
        op: 'gte' as const,
        value: 500,
        actual: '5000',
        type_mismatch: { type: 'string' as const, needs: 'number' },
      },
    ],
    frequency: { more_than: 5, per: 'hour' as const, by: 'tool' as const, count: 7 },
  };
  assert.deepEqual(conditionsInWords(facts), [
    'amount 4200 is more than 1000',
    'currency is "EUR"',
    'payee.country "KY" is none of ["DE","FR"]',
    'memo is present',
    'total is a string, not a number ("5000"): a value of the wrong type counts as met',
    '7 calls of this tool in the last hour, more than 5',
  ]);
  assert.deepEqual(heldArguments(facts), ['amount', 'currency', 'payee.country', 'memo', 'total']);
  assert.deepEqual(conditionsInWords({ classification: 'new' }), [
    'The tool is new: an admin classifies it.',
  ]);
  assert.deepEqual(conditionsInWords(null), []);
  assert.equal(conditionsView({}, 'x'), null);
});

test('conditions in words: hostile argument names and values stay text on one line', () => {
  const facts = {
    conditions: [
      { arg: `a${SCRIPT}`, op: 'matches' as const, value: IMG, actual: `${HIDDEN}\n${'y'.repeat(500)}` },
    ],
  };
  const [words] = conditionsInWords(facts);
  assert.doesNotMatch(words!, /[\n\u202E\u200B]/);
  assert.ok(words!.length < 250);
  const out = conditionsView(facts, `rule${SCRIPT}`)!.toString();
  assertInert(out);
});

const hold = {
  status: 'pending' as const,
  approvers: ['group:finance', 'role:admin'],
  approvalsRequired: 2,
  approvalsReceived: 1,
  expiresAt: 10_000,
};

test('four eyes: who decided with their comment, who still can, why the reader cannot', () => {
  const out = fourEyesView({
    hold,
    decisions: [
      {
        name: `Alice${SCRIPT}`,
        email: 'a@x.test',
        verdict: 'approve',
        comment: `ok ${IMG}`,
        channel: 'email',
        decidedAt: 1000,
      },
    ],
    remaining: [{ name: `Bob${IMG}`, email: 'b@x.test' }],
    blocker: 'already_decided',
  }).toString();
  assertInert(out);
  assert.match(out, /<strong class="count">1 of 2<\/strong>\s*approvals · waiting for finance or an admin/);
  assert.match(out, /Alice&lt;script&gt;.*<\/strong> approved/);
  assert.match(out, /<blockquote>ok &quot;&gt;&lt;img/);
  assert.match(out, /Can still decide: Bob&quot;&gt;/);
  assert.match(out, /You have decided this hold already; each member counts once\./);
});

const person = (email: string, role: string, groups: string[] = [], agents: string[] = []): Decider => ({
  id: email,
  email,
  name: email.split('@')[0]!,
  role,
  groups,
  agents,
});

test('four eyes: the reasons a member cannot decide, in the order a decision checks them', () => {
  const mine: Parameters<typeof decisionCapacity>[0] = { ...hold, agentId: 'bot', requestedFor: null };
  const admin = person('root@x.test', 'admin');
  const blocker = (member: Decider, decided: string[] = [], now = 0, on = mine) =>
    decisionCapacity(
      on,
      member,
      [],
      decided.map((memberId) => ({ memberId, onBehalfOf: null })),
      now,
    ).blocker;
  assert.equal(blocker(person('v@x.test', 'viewer', ['finance'])), 'viewer');
  assert.equal(blocker(person('e@x.test', 'approver')), 'not_an_approver');
  assert.equal(blocker(person('e@x.test', 'approver', ['finance'])), null);
  assert.equal(blocker(admin, ['root@x.test']), 'already_decided');
  assert.equal(blocker(admin, [], 10_000), 'closed');
  assert.equal(blocker(admin, ['root@x.test'], 0, { ...mine, status: 'approved' as const }), 'closed');
  assert.equal(blocker(person('root@x.test', 'admin', [], ['bot'])), 'own_request');
  // Requested for the member (a key bound to them, an OAuth client they allowed), whatever the agent.
  assert.equal(blocker(admin, [], 0, { ...mine, requestedFor: 'root@x.test' }), 'own_request');
  assert.equal(
    blockerInWords('not_an_approver', hold),
    'You are not among the approvers of this hold: it waits for finance or an admin.',
  );
  assert.equal(blockerInWords('viewer', hold), 'You are a viewer: viewers see holds but do not decide.');
});

test('delegation: a delegate decides for the member who delegated, and each person counts once', () => {
  const mine = { ...hold, agentId: 'bot', requestedFor: null };
  const ann = person('ann@x.test', 'approver', ['finance']);
  const dan = person('dan@x.test', 'approver');
  const capacity = (decided: { memberId: string; onBehalfOf: string | null }[], delegators = [ann]) =>
    decisionCapacity(mine, dan, delegators, decided, 0);
  // Dan is no approver of his own, but Ann's delegation makes him decide for her.
  assert.deepEqual(capacity([]), { blocker: null, onBehalfOf: ann });
  assert.equal(decisionCapacity(mine, dan, [], [], 0).blocker, 'not_an_approver');
  // Ann decided herself: nothing left for Dan to give.
  assert.equal(capacity([{ memberId: ann.id, onBehalfOf: null }]).blocker, 'already_decided');
  // Dan decided for Ann: he cannot decide again, as himself or for her.
  assert.equal(capacity([{ memberId: dan.id, onBehalfOf: ann.id }]).blocker, 'already_decided');
  const danInFinance = person('dan@x.test', 'approver', ['finance']);
  assert.equal(
    decisionCapacity(mine, danInFinance, [ann], [{ memberId: dan.id, onBehalfOf: ann.id }], 0).blocker,
    'already_decided',
  );
  // An approver in his own right decides as himself, not for Ann.
  assert.deepEqual(decisionCapacity(mine, danInFinance, [ann], [], 0), { blocker: null, onBehalfOf: null });
  // Nobody decides for Ann a hold her own agent asked for, nor a delegate his own agent's.
  assert.equal(capacity([], [person('ann@x.test', 'approver', ['finance'], ['bot'])]).blocker, 'own_request');
  assert.equal(
    decisionCapacity(mine, person('dan@x.test', 'approver', [], ['bot']), [ann], [], 0).blocker,
    'own_request',
  );
  // Nor for Ann a hold requested for her (her bound key, her OAuth client).
  assert.equal(decisionCapacity({ ...mine, requestedFor: ann.id }, dan, [ann], [], 0).blocker, 'own_request');
});

test('four eyes in a line and after a decision', () => {
  assert.equal(fourEyesLine(hold), '1 of 2 approvals, waiting for finance or an admin');
  assert.equal(
    fourEyesLine({ ...hold, approvalsRequired: 1, approvalsReceived: 0 }),
    'waiting for finance or an admin',
  );
  assert.equal(approversInWords(['bob@x.test']), 'bob@x.test');
  assert.equal(
    approversInWords(['a@x.test', 'b@x.test', 'c@x.test', 'd@x.test']),
    'a@x.test, b@x.test or 2 others',
  );
  assert.equal(
    decidedInWords('approve', { ...hold, approvers: ['group:finance'] }),
    'You approved. 1 of 2 — waiting for finance.',
  );
  assert.equal(
    decidedInWords('approve', { ...hold, status: 'approved' }),
    'You approved. The action is approved.',
  );
  assert.equal(
    decidedInWords('reject', { ...hold, status: 'rejected' }),
    'You rejected. The action is rejected.',
  );
});

test('times: UTC text names its zone; the relative form', () => {
  assert.equal(utcText(Date.UTC(2026, 10, 23, 22, 30, 59)), '2026-11-23 22:30 UTC');
  const now = 1_000_000_000;
  assert.equal(relativeText(now + 12 * 60_000 + 5, now), 'in 12 min');
  assert.equal(relativeText(now - 5 * 60_000, now), '5 min ago');
  assert.equal(relativeText(now + 3 * 3_600_000, now), 'in 3 h');
  assert.equal(relativeText(now - 2 * 86_400_000, now), '2 d ago');
  assert.equal(relativeText(now + 20_000, now), 'now');
});

test('a hold line: names and the summary escaped, hidden characters shown, approvals so far', async () => {
  const { holdLineView, approvalsText } = await import('./hold-line.ts');
  const line = {
    id: 'svc_pa_x',
    environment: 'live' as const,
    connection: `c${IMG}`,
    toolName: `t${SCRIPT}`,
    agentId: HIDDEN,
    agentLabel: `${HIDDEN}${IMG}`,
    requestedFor: null,
    status: 'pending' as const,
    ruleName: SCRIPT,
    approvers: ['role:admin'],
    approvalsRequired: 2,
    approvalsReceived: 1,
    createdAt: 0,
    expiresAt: 60_000,
    verdict: null,
    channel: null,
    decidedAt: null,
    argumentsSummary: `memo=${JSON.stringify(SCRIPT)}`,
    argumentsSize: 40,
    decisions: [{ name: `Ada${IMG}`, verdict: 'approve' }],
    why: { kind: 'approver' as const, rule: SCRIPT },
  };
  const out = holdLineView(line, { href: '/app/inbox?hold=svc_pa_x&q=<b>', selected: true }).toString();
  assertInert(out);
  assert.match(out, /evil\\u202egnp\.exe\\u200b/);
  assert.match(out, /href="\/app\/inbox\?hold=svc_pa_x&amp;q=&lt;b&gt;" aria-current="true"/);
  assert.match(out, /1 of 2 · Ada&quot;&gt;&lt;img/);
  assert.equal(approvalsText({ approvalsRequired: 1, approvalsReceived: 0 }, []), null);
});

test('delegation in words: who decided for whom, who would, and the line a delegate sees', async () => {
  const { holdLineView } = await import('./hold-line.ts');
  const out = fourEyesView({
    hold,
    decisions: [
      {
        name: `Dan${SCRIPT}`,
        email: 'dan@x.test',
        verdict: 'approve',
        comment: null,
        channel: 'inbox',
        decidedAt: 1000,
        onBehalfOfName: `Ann${IMG}`,
      },
    ],
    remaining: [
      { name: 'Bob', email: 'b@x.test', onBehalfOf: null },
      { name: 'Eve', email: 'e@x.test', onBehalfOf: `Cat${IMG}` },
    ],
    blocker: null,
  }).toString();
  assertInert(out);
  assert.match(out, /Dan&lt;script&gt;.*<\/strong> approved for <strong>Ann&quot;&gt;/);
  assert.match(out, /Can still decide: Bob, Eve \(for Cat&quot;&gt;&lt;img/);
  const line = {
    ...{ id: 'svc_pa_x', environment: 'live' as const, connection: 'SDK', toolName: 'pay', agentId: 'bot' },
    ...{
      agentLabel: null,
      requestedFor: null,
      status: 'pending' as const,
      ruleName: null,
      approvers: ['ann@x.test'],
    },
    ...{ approvalsRequired: 1, approvalsReceived: 0, createdAt: 0, expiresAt: null, verdict: null },
    ...{ channel: null, decidedAt: null, argumentsSummary: '', argumentsSize: 2, decisions: [] },
    why: { kind: 'delegated' as const, name: `Ann${SCRIPT}` },
  };
  const marked = holdLineView(line, { href: '/app/inbox', selected: false });
  assertInert(marked.toString());
  assert.match(marked.toString(), /<span class="why" data-why="delegated">for Ann&lt;script&gt;/);
});

test('follow-ups in words: escalation steps, reminders and handovers, oldest first, names escaped', async () => {
  const { followUpsView, minutesInWords } = await import('./follow-ups.ts');
  assert.deepEqual([15, 60, 90, 0.4].map(minutesInWords), ['15 min', '1 h', '1 h 30 min', '0 min']);
  assert.equal(followUpsView('h', []), null);
  const at = Date.UTC(2026, 10, 25, 10, 15);
  const out = followUpsView('h', [
    {
      kind: 'escalation',
      at,
      step: 1,
      afterMinutes: 15,
      added: ['group:oncall', 'role:admin'],
      asked: [`Olga${SCRIPT}`, 'Oscar'],
    },
    { kind: 'escalation', at, step: 2, afterMinutes: 45, added: [], asked: [] },
    { kind: 'reminder', at: at + 15 * 60_000, reminded: ['Bob', `Cat${IMG}`], secondsLeft: 1800 },
    {
      kind: 'handover',
      at: at + 20 * 60_000,
      member: `Ann${SCRIPT}`,
      delegate: 'Dan',
      until: at + 86_400_000,
    },
  ])!.toString();
  assertInert(out);
  const text = out.replace(/<[^>]+>/g, '').replace(/\s+/g, ' ');
  assert.match(
    text,
    /Escalated to oncall and an admin \(step 1, after 15 min\) at 2026-11-25 10:15 UTC — asked Olga&lt;script&gt;alert\(1\)&lt;\/script&gt;, Oscar/,
  );
  assert.match(text, /Escalated \(step 2, after 45 min\) at 2026-11-25 10:15 UTC — nobody new to ask/);
  assert.match(
    text,
    /Reminded Bob, Cat&quot;&gt;&lt;img src=x onerror=alert\(2\)&gt; at 2026-11-25 10:30 UTC \(30 min left\)/,
  );
  assert.match(
    text,
    /Handed to Dan at 2026-11-25 10:35 UTC: Ann&lt;script&gt;alert\(1\)&lt;\/script&gt; is away until 2026-11-26 10:15 UTC/,
  );
});
