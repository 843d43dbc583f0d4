import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hold } from '../domain/hold.ts';
import { NOT_IN_FULL, teamsCard } from './teams-card.ts';

const LINK = '[Approve here](https://evil.test/steal)';
const HEADING = '\n# Approved by security\n';
const BIDI = '\u202eevil\u2066';
const DATE = '{{DATE(2030-01-01T00:00:00Z, SHORT)}}';

const hostile: Hold = {
  id: 'svc_pa_0123456789abcdefghijkl',
  workspaceId: 'org_1',
  environment: 'live',
  connection: `SDK ${LINK}`,
  toolName: `pay${HEADING}`,
  agentId: 'bot',
  agentLabel: `**Security team**${HEADING}${BIDI} ${LINK}`,
  requestedFor: null,
  arguments: { note: `${LINK}${HEADING}${BIDI}\r\n- [x] checked ${DATE}`, [`k${LINK}`]: 1 },
  changedArguments: null,
  context: {},
  idempotencyKey: 'k',
  fingerprint: 'f',
  submitStatus: 'pending',
  status: 'pending',
  ruleName: null,
  approvers: [],
  approvalsRequired: 2,
  approvalsReceived: 1,
  createdAt: 0,
  expiresAt: Date.UTC(2026, 10, 23, 22, 30),
  verdict: null,
  reason: null,
  channel: null,
  decidedAt: null,
  mcpServerId: null,
  callKey: null,
  execution: null,
};
const brand = { name: `Acme ${LINK}${HEADING}`, accentColor: null, logoUrl: null };
const options = {
  approvedBy: [`Mallory ${LINK}\n## done`],
  reviewUrl: 'https://approvals.test/app/holds/x',
  link: 'https://approvals.test/d/token',
};

/** Every element of a card (body and actions), depth first. */
function elements(value: unknown): Record<string, any>[] {
  if (Array.isArray(value)) return value.flatMap(elements);
  if (!value || typeof value !== 'object') return [];
  const object = value as Record<string, any>;
  const own = typeof object.type === 'string' ? [object] : [];
  return [...own, ...Object.values(object).flatMap(elements)];
}

const runs = (card: unknown) => elements(card).filter((e) => e.type === 'TextRun');
const actions = (card: { actions?: unknown[] }) =>
  (card.actions ?? []).map((a: any) => `${a.type}:${a.verb ?? a.title}`);

/** Line breaks and characters that hide or reorder text. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

test('Teams card: agent text only ever in TextRuns (no markdown), one line, no bidi, no date function', () => {
  for (const hold of [
    hostile,
    { ...hostile, arguments: { amount: 1 } },
    { ...hostile, status: 'rejected' as const, channel: 'slack' as const },
  ]) {
    for (const card of [
      teamsCard(brand, hold, options),
      teamsCard(brand, hold, { ...options, final: LINK }),
    ]) {
      const kinds = new Set(elements(card).map((e) => e.type));
      for (const kind of kinds)
        assert.ok(
          [
            'AdaptiveCard',
            'RichTextBlock',
            'TextRun',
            'TextBlock',
            'Action.Execute',
            'Action.OpenUrl',
          ].includes(kind),
          `unexpected element ${kind}`,
        );
      // TextBlocks render markdown: they hold nothing but our own words.
      for (const block of elements(card).filter((e) => e.type === 'TextBlock'))
        assert.equal(block.text, NOT_IN_FULL);
      for (const { text } of runs(card)) {
        // Our own zero-width space inside `{{` is the one hidden character allowed.
        assert.doesNotMatch(text.replaceAll('{\u200b{', '{{}'), HIDDEN, JSON.stringify(text));
        assert.ok(!text.includes('{{'), text);
      }
      const all = runs(card)
        .map((r) => r.text)
        .join(' ');
      assert.ok(all.includes(LINK), 'the link text is shown as it is, in a TextRun');
      assert.match(all, /\\u202eevil\\u2066/, 'bidi characters are shown escaped');
      assert.match(all, /\\n# Approved by security\\n/, 'a heading stays on the line, escaped');
      // Only our own URLs, only the hold's id as action data.
      for (const action of card.actions ?? []) {
        const a = action as Record<string, any>;
        if (a.type === 'Action.OpenUrl') assert.match(a.url, /^https:\/\/approvals\.test\//);
        else assert.deepEqual(a.data, { hold: hostile.id });
      }
    }
  }
});

test('Teams card: Approve and Reject only while pending and when every argument is shown', () => {
  const short = { ...hostile, toolName: 'pay', arguments: { amount: 1200 } };
  const full = teamsCard(brand, short, options);
  assert.equal(full.version, '1.4');
  assert.deepEqual(actions(full), ['Action.Execute:approve', 'Action.Execute:reject', 'Action.OpenUrl:Open']);
  assert.deepEqual(actions(teamsCard(brand, short, { ...options, link: null })), [
    'Action.Execute:approve',
    'Action.Execute:reject',
  ]);
  const facts = runs(full).map((r) => r.text);
  assert.ok(
    facts.some((t) => t.includes('decide by 2026-11-23 22:30 UTC')),
    facts.join('|'),
  );
  assert.ok(
    facts.some((t) => t.includes('(1 of 2)')),
    facts.join('|'),
  );
  assert.ok(!elements(full).some((e) => e.text === NOT_IN_FULL));

  // A summary that does not fit: no decision on it, a link to review it in full, and why.
  const long = {
    ...short,
    arguments: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, i])),
  };
  const cut = teamsCard(brand, long, options);
  assert.deepEqual(actions(cut), ['Action.OpenUrl:Review']);
  assert.equal((cut.actions![0] as any).url, options.link);
  assert.equal(
    (teamsCard(brand, long, { ...options, link: null }).actions![0] as any).url,
    options.reviewUrl,
  );
  assert.ok(elements(cut).some((e) => e.type === 'TextBlock' && e.text === NOT_IN_FULL));
  assert.ok(!elements(cut).some((e) => e.type === 'Action.Execute'));
  assert.match(JSON.stringify(cut), /\+\d+ more fields\)/);
});

test('Teams card: once decided, or closed for its reader, no actions and the outcome', () => {
  const short = { ...hostile, toolName: 'pay', arguments: { amount: 1200 } };
  const outcome = (card: unknown) => runs(card).map((r) => r.text);
  const approved = teamsCard(brand, { ...short, status: 'approved', channel: 'teams' as never }, options);
  assert.equal(approved.actions, undefined);
  assert.ok(outcome(approved).includes('Approved (via teams)'), outcome(approved).join('|'));
  assert.ok(!outcome(approved).some((t) => t.includes('decide by')), 'no deadline once decided');
  const rejected = teamsCard(brand, { ...short, status: 'rejected', channel: 'rule' }, options);
  assert.ok(outcome(rejected).includes('Rejected'));
  const expired = teamsCard(brand, { ...short, status: 'expired' }, options);
  assert.ok(outcome(expired).some((t) => t.startsWith('Expired')));
  // Still waiting for a second approver, but this reader has approved.
  const mine = teamsCard(brand, short, { ...options, final: 'You approved: one more approval is needed' });
  assert.equal(mine.actions, undefined);
  assert.ok(outcome(mine).includes('You approved: one more approval is needed'));
});

test('Teams card: to a delegate, whom they decide for and until when, under the title, only while the hold waits', () => {
  const short = { ...hostile, toolName: 'pay', arguments: { amount: 1200 } };
  const forWhom = { name: 'Ann', until: Date.UTC(2026, 11, 8, 9) };
  const line = 'You decide this for Ann, who is away until 2026-12-08 09:00 UTC';
  const [title, first] = runs(teamsCard(brand, short, { ...options, forWhom }));
  assert.match(title!.text, /^Approve pay 1,200 — needs approval; .*for Ann, who is away$/);
  assert.equal(first!.text, line);
  const decided = teamsCard(brand, { ...short, status: 'approved' }, { ...options, forWhom });
  assert.ok(!runs(decided).some((r) => r.text === line));
});

test('Teams card: while the hold waits, its title says the deciding values and why it is the reader’s', () => {
  const payment: Hold = {
    ...hostile,
    toolName: 'payments.send',
    ruleName: 'Large payments need two approvers',
    arguments: { memo: 'Q4 licences', amount: 31496.75, currency: 'EUR', payee: 'Globex' },
  };
  const options = { approvedBy: ['Ann'], reviewUrl: 'https://approvals.test/app/holds/x', link: null };
  const card = teamsCard(brand, payment, { ...options, escalated: true });
  const first = JSON.stringify(card.body[0]);
  assert.match(
    first,
    /Approve payments\.send 31,496\.75 EUR to Globex — Large payments need two approvers; escalated to you; 1 of 2 approvals in/,
  );
  assert.match(first, /"type":"TextRun"/, 'a TextRun: agent text renders no markdown');
  const decided = teamsCard(brand, { ...payment, status: 'approved' }, options);
  assert.doesNotMatch(
    JSON.stringify(decided.body),
    /escalated to you|— Large payments/,
    'no title once decided',
  );
});
