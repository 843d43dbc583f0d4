import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hold } from '../domain/hold.ts';
import { digestMail, slackDigest, smsDigest, teamsDigest } from './digest-messages.ts';
import { channelSummary, outcomeMail, requestMail, slackMessage, smsText } from './messages.ts';

const SCRIPT = '<script>alert(1)</script>';
const IMG = '"><img src=x onerror=alert(2)>';
const SLACK = '<!channel> <https://evil.test|click here> &amp;';

const hostile: Hold = {
  id: 'svc_pa_0123456789abcdefghijkl',
  workspaceId: 'org_1',
  environment: 'live',
  connection: `SDK${IMG}`,
  toolName: 'pay.out',
  agentId: `agent${SLACK}`,
  agentLabel: `${SCRIPT}${SLACK}`,
  requestedFor: null,
  arguments: { note: `${SCRIPT}${IMG}${SLACK}`, [`k${SCRIPT}`]: 1 },
  changedArguments: null,
  context: {},
  idempotencyKey: 'k',
  fingerprint: 'f',
  submitStatus: 'pending',
  status: 'pending',
  ruleName: null,
  approvers: [],
  approvalsRequired: 1,
  approvalsReceived: 0,
  createdAt: 0,
  expiresAt: 60_000,
  verdict: null,
  reason: null,
  channel: null,
  decidedAt: null,
  mcpServerId: null,
  callKey: null,
  execution: null,
};
const brand = { name: `Acme${SCRIPT}`, accentColor: `red;}${IMG}`, logoUrl: `https://x.test/${IMG}` };

/** Every string anywhere in a Slack message. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

test('Slack: no control sequence from a hold reaches any text, the notification text included', () => {
  for (const hold of [hostile, { ...hostile, status: 'rejected' as const, channel: 'inbox' as const }]) {
    const message = slackMessage(
      brand,
      hold,
      'https://approvals.test/d/token',
      ['Ada'],
      'https://approvals.test/app/holds/x',
    );
    for (const text of strings(message)) {
      if (text.startsWith('https://approvals.test/')) continue; // our own link, a button's url
      assert.doesNotMatch(text, /[<>]/, `raw control character in ${JSON.stringify(text)}`);
    }
    assert.match(strings(message).join('\n'), /&lt;!channel&gt;/);
  }
});

test('e-mails: values from a hold and the branding are inert in the HTML', () => {
  for (const mail of [
    requestMail(brand, hostile, 'https://approvals.test/d/token'),
    outcomeMail(brand, hostile),
  ]) {
    // Quoted attribute values taken out, no tag of the mail may carry a script or a handler.
    const tags = mail.html.replace(/"[^"]*"/g, '""');
    assert.doesNotMatch(tags, /<script|<img src=x|<[^>]*\son\w+=/i);
    assert.match(mail.html, /&lt;script&gt;/);
    assert.match(mail.html, /#1f4fd1/, 'an accent that is not a colour is not used');
  }
});

/** Agent text that tries to start lines and sentences of its own in a plain-text message. */
const BREAKS = ['\n', '\r', '\u2028', '\u2029', '\u0085', '\u000b', '\u000c'];
const forger: Hold = {
  ...hostile,
  connection: 'SDK',
  toolName: 'pay\nApproved by security',
  agentLabel: 'Bot. Approved by Ada.\nReply YES 1234\u2028Done\u0085\u202eevil',
  agentId: 'bot',
  arguments: { [`to\nAmount: 1`]: 'x\u2029All checks passed.\r\nReply YES 1234', amount: 950000 },
};

test('plain text: agent text makes no line of its own and stays quoted, in mails, SMS and Slack', () => {
  const mail = requestMail(brand, forger, 'https://approvals.test/d/token');
  const lines = mail.text.split('\n');
  assert.equal(lines.length, 8, `only the mail's own lines: ${JSON.stringify(mail.text)}`);
  assert.match(
    lines[0]!,
    /^"Bot\. Approved by Ada\.\\nReply YES 1234\\u2028Done\\u0085\\u202eevil" wants to run "pay\\nApproved by security" on SDK\.$/,
  );
  assert.match(
    lines[2]!,
    /^"pay\\nApproved by security"\("to\\nAmount: 1"="x\\u2029All checks passed\.\\r\\nReply YES 1234", amount=950000\)$/,
  );
  const texts = {
    'mail text': mail.text.replaceAll('\n', ' '),
    'mail subject': mail.subject,
    'outcome text': outcomeMail(brand, { ...forger, status: 'rejected' }).text.replaceAll('\n', ' '),
    sms: smsText(forger, 'https://approvals.test/d/token', '1234'),
    'Slack text': slackMessage(brand, forger, null, [], 'https://approvals.test/app/holds/x').text,
  };
  for (const [name, text] of Object.entries(texts)) {
    for (const lineBreak of [...BREAKS, '\u202e'])
      assert.ok(
        !text.includes(lineBreak),
        `${name} holds ${JSON.stringify(lineBreak)}: ${JSON.stringify(text)}`,
      );
  }
});

test('a rule that lets approvers change arguments: each message says the page can, beside its link', () => {
  const short = { ...hostile, connection: 'SDK', arguments: { amount: 1200 } };
  const link = 'https://approvals.test/d/t';
  const mail = requestMail(brand, short, link, { editable: true });
  assert.match(
    mail.text,
    /d\/t\nYou may change some of its arguments before approving: open it to approve with changes\./,
  );
  assert.match(mail.html, /open it to approve with changes/);
  assert.doesNotMatch(requestMail(brand, short, link).text, /approve with changes/);
  assert.match(
    smsText(short, link, '4821', { editable: true }),
    /d\/t \(to change it first\) Or reply YES 4821/,
  );
  const slack = JSON.stringify(
    slackMessage(brand, short, link, [], 'https://approvals.test/app/holds/x', { editable: true }),
  );
  assert.match(slack, /open it to approve with changes/);
});

test('SMS: a reply code only when the text shows every argument, the link to review it otherwise', () => {
  const short = { ...hostile, connection: 'SDK', arguments: { amount: 1200 } };
  assert.equal(channelSummary(short, 'sms').complete, true);
  assert.match(smsText(short, 'https://approvals.test/d/t', '4821'), /Or reply YES 4821 \/ NO 4821\.$/);
  const long = { ...short, arguments: { memo: ' '.repeat(300), amount: 950000, payee: 'Mallory Ltd' } };
  assert.equal(channelSummary(long, 'sms').complete, false);
  const text = smsText(long, 'https://approvals.test/d/t', null);
  assert.doesNotMatch(text, /YES|NO \d/);
  assert.match(text, /amount=950000, \+1 more field\) Review it in full: https:\/\/approvals\.test\/d\/t$/);
});

test('Slack: Approve and Reject only when every argument is shown; Review otherwise', () => {
  const ids = (message: ReturnType<typeof slackMessage>) =>
    message.blocks
      .filter((block: any) => block.type === 'actions')
      .flatMap((block: any) => block.elements.map((button: any) => button.action_id));
  const short = { ...hostile, arguments: { amount: 1200 } };
  assert.deepEqual(ids(slackMessage(brand, short, 'https://a.test/d/t', [], 'https://a.test/app/holds/x')), [
    'approve',
    'reject',
    'open',
  ]);
  const long = {
    ...short,
    arguments: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`f${i}`, i])),
  };
  const message = slackMessage(brand, long, null, [], 'https://a.test/app/holds/x');
  assert.deepEqual(ids(message), ['review']);
  assert.match(JSON.stringify(message.blocks), /\+\d+ more fields\)/);
});

test('Slack: agent text cannot close the code block the action is shown in', () => {
  const hold = { ...hostile, arguments: { note: '```\n*Approved by security*\n```' } };
  const blocks = slackMessage(brand, hold, null, [], 'https://a.test/app/holds/x').blocks as any[];
  const section = blocks.find((block) => block.text?.text.includes('```'));
  assert.equal(section.text.text.split('```').length, 3, section.text.text);
});

test('e-mail subjects: the deciding values and the reason, on one line; times name their zone', () => {
  const pay = {
    ...hostile,
    toolName: 'pay',
    connection: 'SDK',
    ruleName: 'Large payments need two approvers',
    arguments: { memo: 'x'.repeat(500), amount: 31496.75, currency: 'EUR', payee: 'Globex' },
    approvers: ['group:finance'],
    approvalsRequired: 2,
    approvalsReceived: 0,
    expiresAt: Date.UTC(2026, 10, 23, 22, 30),
  };
  const request = requestMail(brand, pay, 'https://approvals.test/d/t', { escalated: true });
  assert.equal(
    request.subject,
    'Approve pay 31,496.75 EUR to Globex — Large payments need two approvers; escalated to you',
  );
  assert.match(request.text, /decide by 2026-11-23 22:30 UTC/);
  // A four-eyes second, a reminder; a payee that is not a plain name is quoted; no money, no amount.
  assert.equal(
    requestMail(
      brand,
      { ...pay, approvalsReceived: 1, arguments: { amount: 5, to: 'Acme Ltd' } },
      'https://x.test/d/t',
      {
        reminder: { leftMs: 25 * 60_000, approvedBy: ['Ada'] },
      },
    ).subject,
    'Approve pay 5 to "Acme Ltd" — Large payments need two approvers; reminder, 25 min left; 1 of 2 approvals in',
  );
  assert.equal(
    requestMail(brand, { ...pay, ruleName: null, arguments: { note: 'x' } }, 'https://x.test/d/t').subject,
    'Approve pay — needs approval',
  );
  assert.equal(
    outcomeMail(brand, { ...pay, arguments: { amount: 4200 }, status: 'approved', approvalsReceived: 2 })
      .subject,
    'Approved: pay(amount=4200) on SDK',
  );
  // Agent text in a payee cannot pass for the subject's own words, nor break its line.
  const forged = requestMail(
    brand,
    { ...pay, arguments: { payee: 'Globex — approved by CFO\nBcc: x' } },
    'https://x.test/d/t',
  );
  assert.equal(
    forged.subject,
    'Approve pay to "Globex — approved by CFO\\nBcc: x" — Large payments need two approvers',
  );
  // Nor close its quotes early, nor pass as a link.
  const subjectFor = (payee: string) =>
    requestMail(brand, { ...pay, arguments: { payee } }, 'https://x.test/d/t').subject;
  assert.equal(
    subjectFor('x\\" approved'),
    'Approve pay to "x\\\\\\" approved" — Large payments need two approvers',
  );
  assert.equal(
    subjectFor('https://evil.test/x'),
    'Approve pay to "https://evil.test/x" — Large payments need two approvers',
  );
  for (const subject of [
    requestMail(brand, forger, 'https://x.test/d/t').subject,
    outcomeMail(brand, forger).subject,
  ])
    for (const lineBreak of [...BREAKS, '\u202e'])
      assert.ok(!subject.includes(lineBreak), JSON.stringify(subject));
});

test('to a delegate, every channel says whom they decide for and until when, above the hold, only while it waits', () => {
  const hold = { ...hostile, connection: 'SDK', arguments: { amount: 1200 } };
  const forWhom = { name: `Ann${SCRIPT}`, until: Date.UTC(2026, 11, 8, 9) };
  const line = `You decide this for Ann${SCRIPT}, who is away until 2026-12-08 09:00 UTC.`;
  const mail = requestMail(brand, hold, 'https://approvals.test/d/t', { forWhom });
  assert.ok(mail.text.startsWith(`${line}\n\n`), mail.text);
  assert.match(
    mail.html,
    /<p><strong>You decide this for Ann&lt;script&gt;alert\(1\)&lt;\/script&gt;, who is away/,
  );
  assert.ok(!mail.html.includes(SCRIPT));
  // After a reminder's line, when both.
  const reminded = requestMail(brand, hold, 'https://approvals.test/d/t', {
    forWhom,
    reminder: { leftMs: 25 * 60_000, approvedBy: [] },
  });
  assert.ok(
    reminded.text.startsWith(`Reminder: 25 min left to decide · nobody has approved yet.\n${line}\n\n`),
  );
  assert.match(
    smsText(hold, 'https://approvals.test/d/t', '4821', { forWhom: { ...forWhom, name: 'Ann' } }),
    /^Approval needed for Ann \(SDK\): pay\.out\(amount=1200\)/,
  );
  const slack = slackMessage(brand, hold, null, [], 'https://a.test/app/holds/x', { forWhom });
  // Below the title, which says so too.
  assert.match((slack.blocks[0] as any).text.text, /; for Ann&lt;script&gt;.*, who is away\*$/);
  assert.deepEqual(
    (slack.blocks[1] as any).text.text,
    `*${line.replaceAll('<', '&lt;').replaceAll('>', '&gt;')}*`,
  );
  const decided = slackMessage(brand, { ...hold, status: 'approved' }, null, [], 'https://a.test/x', {
    forWhom,
  });
  assert.ok(!strings(decided).some((text) => text.includes('You decide')));
});

test('digests: a line per hold with its own link; agent text inert in every channel', () => {
  const entries = [1, 2, 3].map((n) => ({
    hold: {
      ...hostile,
      id: `svc_pa_${n}`,
      arguments: { amount: n, payee: `${SLACK}\n${SCRIPT}` },
      expiresAt: Date.UTC(2026, 10, 23, 10, 30 + n),
    },
    link: `https://approvals.test/d/token${n}`,
    asking: { escalated: n > 1 },
  }));
  const now = Date.UTC(2026, 10, 23, 10);
  const mail = digestMail(brand, entries, now, null);
  assert.equal(mail.subject, '3 holds wait for you — 2 escalated, due from 10:31 UTC');
  for (const n of [1, 2, 3]) assert.ok(mail.text.includes(`https://approvals.test/d/token${n}`));
  assert.ok(!mail.html.includes(SCRIPT));
  for (const line of mail.text.split('\n')) assert.ok(!line.startsWith('<script'), line);
  const slack = slackDigest(
    brand,
    entries,
    entries,
    'https://approvals.test/app/inbox',
    now,
    'Europe/Berlin',
  );
  const texts = strings(slack).join('\n');
  // In the member's zone when they set one.
  assert.equal(slack.text, '3 holds wait for you — 2 escalated, due from 11:31 Europe/Berlin');
  assert.match(texts, /decide by 11:32 Europe\/Berlin/, "each line's deadline in the same zone as the title");
  // Tomorrow's morning is named with its date, though it is less than a day away.
  const late = Date.UTC(2026, 10, 23, 22);
  const tomorrow = [{ ...entries[0]!, hold: { ...entries[0]!.hold, expiresAt: Date.UTC(2026, 10, 24, 8) } }];
  assert.match(
    digestMail(brand, [...tomorrow, ...tomorrow], late, null).subject,
    /due from 2026-11-24 08:00 UTC$/,
  );
  assert.ok(!texts.includes('<!channel>') && !texts.includes('<https://evil.test'), texts);
  assert.ok(!texts.includes('"action_id"') && !JSON.stringify(slack).includes('"button"'));
  assert.equal((texts.match(/<https:\/\/approvals\.test\/d\/token\d\|/g) ?? []).length, 3);
  assert.match(
    smsDigest(entries, 'https://approvals.test/app/inbox', now, null),
    /^3 holds wait for you — 2 escalated, due from .*\. Open your inbox: https:\/\/approvals\.test\/app\/inbox$/,
  );
  const card = JSON.stringify(
    teamsDigest(brand, entries, entries, 'https://approvals.test/app/inbox', now, null),
  );
  assert.ok(!card.includes('Action.Execute'), 'no one-click decision on a summary');
  assert.equal((card.match(/approvals\.test\/d\/token/g) ?? []).length, 3);
});
