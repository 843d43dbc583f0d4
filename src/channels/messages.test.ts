import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Hold } from '../domain/hold.ts';
import { outcomeMail, requestMail, slackMessage } from './messages.ts';

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
  arguments: { note: `${SCRIPT}${IMG}${SLACK}`, [`k${SCRIPT}`]: 1 },
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
    const message = slackMessage(brand, hold, 'https://approvals.test/d/token', ['Ada']);
    for (const text of strings(message)) {
      if (text.startsWith('https://approvals.test/')) continue; // our own link, a button's url
      assert.doesNotMatch(text, /[<>]/, `raw control character in ${JSON.stringify(text)}`);
    }
    assert.match(message.text, /&lt;!channel&gt;/);
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
