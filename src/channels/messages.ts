/**
 * What approvers receive (decisions.md: every notification names the tool and the connection and
 * summarizes the arguments): the e-mails, the Slack message and the SMS for a hold that waits, and
 * for its outcome. Values are escaped by the `html` tag; Slack text escapes its control characters;
 * in plain text, agent-supplied names are quoted and nothing of theirs breaks a line (summary.ts).
 * E-mails show every argument in full. Slack, SMS (and the widget) have room for a summary only: they
 * offer a one-click decision only when it shows every argument, a link to review it otherwise.
 */
import { durationText } from '../domain/follow-ups.ts';
import { outcomeText } from '../domain/outcome-text.ts';
import type { Hold } from '../domain/hold.ts';
import { type ActionSummary, nameText, summarizeAction } from '../domain/summary.ts';
import { utcText } from '../domain/time-text.ts';
import { html } from '../markup/html.ts';
import type { MailMessage } from './email.ts';
import type { SlackMessage } from './slack.ts';
import { type Principal, type Reminder, requestTitle, type Why } from './titles.ts';

export type { Principal, Reminder };

export interface Branding {
  name: string;
  accentColor: string | null;
  logoUrl: string | null;
}

/** Characters of a summary each channel has room for (tool and arguments). */
export const SUMMARY_LENGTH = { slack: 500, sms: 100, widget: 300 } as const;

/** What `channel` shows of a hold's action, and whether that is every argument in full. */
export const channelSummary = (hold: Hold, channel: keyof typeof SUMMARY_LENGTH): ActionSummary =>
  summarizeAction(hold.toolName, hold.arguments, SUMMARY_LENGTH[channel]);

/** The action with every argument in full, for e-mails (no room limit there). */
const fullAction = (hold: Hold) => summarizeAction(hold.toolName, hold.arguments, Infinity).text;

const NOT_IN_FULL = 'Not every argument fits here: review it in full before deciding.';

/** `"Billing bot" wants to run send_invoice on SDK`: agent-supplied names quoted, on one line. */
const headline = (hold: Hold) =>
  `${nameText(hold.agentLabel ?? hold.agentId)} wants to run ${nameText(hold.toolName)} on ${nameText(hold.connection)}`;

export const deadline = (hold: Hold) =>
  hold.expiresAt === null ? 'no deadline' : `decide by ${utcText(hold.expiresAt)}`;

/** Room for the action in a subject line; the mail itself shows it whole. */
const SUBJECT_SUMMARY = 120;

/** `pay(amount=4200, currency="EUR") on SDK`: one line, cut to fit a subject. */
const subjectAction = (hold: Hold) =>
  `${summarizeAction(hold.toolName, hold.arguments, SUBJECT_SUMMARY).text} on ${nameText(hold.connection)}`;

export function frame(brand: Branding, title: string, body: ReturnType<typeof html>) {
  const accent =
    brand.accentColor && /^#[0-9a-fA-F]{6}$/.test(brand.accentColor) ? brand.accentColor : '#1f4fd1';
  return html`<!doctype html>
    <html lang="en">
      <body style="font-family: system-ui, sans-serif; color: #1a1a1a; max-width: 36rem; margin: 0 auto">
        <div style="border-top: 4px solid ${accent}; padding: 1rem 0">
          ${
            brand.logoUrl?.startsWith('https://')
              ? html`<img src="${brand.logoUrl}" alt="${brand.name}" height="32" /><br />`
              : null
          }
          <strong>${brand.name}</strong>
        </div>
        <h1 style="font-size: 1.25rem">${title}</h1>
        ${body}
      </body>
    </html>`.toString();
}

/** `Reminder: 25 min left · approved so far by Ada Admin`. */
export const reminderLine = (reminder: Reminder) =>
  `Reminder: ${durationText(reminder.leftMs)} left to decide${
    reminder.approvedBy.length > 0
      ? ` · approved so far by ${reminder.approvedBy.join(', ')}`
      : ' · nobody has approved yet'
  }`;

/** What a request or reminder tells its reader besides the hold: why it is theirs (titles.ts), and more. */
export interface Asking extends Why {
  /**
   * The approval must carry the approver's passkey signature (a rule's `signed`, the workspace's
   * `require_passkey`), which a button or a reply code cannot: the message links to the page instead.
   */
  signed?: boolean;
  /**
   * Its rule lets an approver change some arguments first (`editable`), which only the page can: the
   * message says so beside its link (its buttons still approve the call as shown).
   */
  editable?: boolean;
}

export const SIGN_ON_PAGE = 'Approving needs your passkey: open it to approve on its page.';
export const CHANGE_ON_PAGE =
  'You may change some of its arguments before approving: open it to approve with changes.';

/** `You decide this for Ann Lee, who is away until 2026-12-08 09:00 UTC`. */
export const forWhomLine = (principal: Principal) =>
  `You decide this for ${principal.name}, who is away until ${utcText(principal.until)}`;

/** The lines above the hold, each a sentence: the reminder's, then whom the reader decides for. */
const askingLines = ({ reminder, forWhom }: Asking) => [
  ...(reminder ? [`${reminderLine(reminder)}.`] : []),
  ...(forWhom ? [`${forWhomLine(forWhom)}.`] : []),
];

const askingLead = ({ reminder }: Asking) =>
  reminder ? `Reminder, ${durationText(reminder.leftMs)} left` : 'Approval needed';

export function requestMail(
  brand: Branding,
  hold: Hold,
  link: string,
  asking: Asking = {},
): Omit<MailMessage, 'to'> {
  const summary = fullAction(hold);
  const subject = requestTitle(hold, asking);
  const above = askingLines(asking);
  const text = [
    ...(above.length > 0 ? [...above, ''] : []),
    `${headline(hold)}.`,
    '',
    summary,
    '',
    `Open to approve or reject (${deadline(hold)}):`,
    link,
    ...(asking.editable ? [CHANGE_ON_PAGE] : []),
    '',
    `— ${brand.name}`,
  ].join('\n');
  const body = html`${above.map((line) => html`<p><strong>${line}</strong></p>`)}
    <p>
      <strong>${hold.agentLabel ?? hold.agentId}</strong> wants to run <code>${hold.toolName}</code> on
      <strong>${hold.connection}</strong>.
    </p>
    <pre style="background: #f4f4f5; padding: 0.75rem; white-space: pre-wrap">${summary}</pre>
    <p>${deadline(hold)}.</p>
    <p><a href="${link}" style="font-weight: bold">Open to approve or reject</a></p>
    ${asking.editable ? html`<p>${CHANGE_ON_PAGE}</p>` : null}
    <p style="color: #666; font-size: 0.875rem">Opening the link does not decide anything.</p>`;
  return { subject, text, html: frame(brand, subject, body) };
}

export function outcomeMail(brand: Branding, hold: Hold): Omit<MailMessage, 'to'> {
  const outcome = outcomeText(hold);
  const subject = `${outcome.split(':')[0]}: ${subjectAction(hold)}`;
  const by = hold.channel && hold.channel !== 'rule' ? ` (decided via ${hold.channel})` : '';
  const summary = fullAction(hold);
  const text = [`${outcome}${by}.`, '', summary, '', `— ${brand.name}`].join('\n');
  const body = html`<p><strong>${outcome}</strong>${by}.</p>
    <pre style="background: #f4f4f5; padding: 0.75rem; white-space: pre-wrap">${summary}</pre>`;
  return { subject, text, html: frame(brand, subject, body) };
}

/**
 * To the approvers of a call whose outcome is unknown: the service sent it upstream and never got the
 * answer, so it may or may not have happened; someone has to look, and the service will not run it again.
 */
export function unknownOutcomeMail(brand: Branding, hold: Hold, reviewUrl: string): Omit<MailMessage, 'to'> {
  const subject = `Outcome unknown: ${subjectAction(hold)}`;
  const summary = fullAction(hold);
  const error = hold.execution?.outcome as { message?: unknown } | null;
  const why = typeof error?.message === 'string' ? error.message : 'no answer from the MCP server';
  const lead = `An approved action may or may not have happened: it was sent to ${nameText(hold.connection)}, which never answered.`;
  const advice = `Check in ${nameText(hold.connection)} whether it happened. The service will not run it again; an agent that asks for it again makes a new request.`;
  const text = [lead, '', summary, '', `Why: ${why}`, '', advice, reviewUrl, '', `— ${brand.name}`].join(
    '\n',
  );
  const body = html`<p><strong>${lead}</strong></p>
    <pre style="background: #f4f4f5; padding: 0.75rem; white-space: pre-wrap">${summary}</pre>
    <p>Why: ${why}</p>
    <p>${advice}</p>
    <p><a href="${reviewUrl}">Open the action</a></p>`;
  return { subject, text, html: frame(brand, subject, body) };
}

/** The sign-in e-mail: a link for each workspace of the address, each working once for `minutes`. */
export function signInMail(
  links: { workspace: string; url: string }[],
  minutes: number,
): Omit<MailMessage, 'to'> {
  return {
    subject: 'Your sign-in link',
    text: [
      `Sign in to approvals (the link works once, for ${minutes} minutes):`,
      ...links.map((link) => `${link.workspace}: ${link.url}`),
      '',
      'If you did not ask for this, ignore this e-mail.',
    ].join('\n'),
    html: html`<p>Sign in to approvals (each link works once, for ${minutes} minutes):</p>
      <ul>
        ${links.map((link) => html`<li><a href="${link.url}">${link.workspace}</a></li>`)}
      </ul>
      <p>If you did not ask for this, ignore this e-mail.</p>`.toString(),
  };
}

/** A sign-in link an admin had sent to the member (never shown to the admin): it names who asked. */
export function invitedMail(
  link: { workspace: string; url: string },
  askedBy: string,
  days: number,
): Omit<MailMessage, 'to'> {
  return {
    subject: 'Your sign-in link',
    text: [
      `${askedBy} asked for a sign-in link for you to ${link.workspace} (it works once, for ${days} days):`,
      link.url,
      '',
      'Only you received this link. Do not pass it on.',
    ].join('\n'),
    html: html`<p>
        ${askedBy} asked for a sign-in link for you to ${link.workspace} (it works once, for ${days} days):
      </p>
      <p><a href="${link.url}">Sign in to ${link.workspace}</a></p>
      <p>Only you received this link. Do not pass it on.</p>`.toString(),
  };
}

/** The link to add a passkey, sent to the member's own address only. */
export function passkeyLinkMail(workspace: string, url: string, minutes: number): Omit<MailMessage, 'to'> {
  return {
    subject: 'Add a passkey',
    text: [
      `To add a passkey to your account in ${workspace}, open this link (it works once, for ${minutes} minutes):`,
      url,
      '',
      'If you did not ask for this, ignore this e-mail and tell your admins.',
    ].join('\n'),
    html: html`<p>
        To add a passkey to your account in ${workspace}, open this link (it works once, for ${minutes}
        minutes):
      </p>
      <p><a href="${url}">Add a passkey</a></p>
      <p>If you did not ask for this, ignore this e-mail and tell your admins.</p>`.toString(),
  };
}

/** A passkey of the member was added or removed: said to them, so that one they did not add shows. */
export function passkeyChangedMail(
  workspace: string,
  change: 'added' | 'removed',
  name: string,
  settingsUrl: string,
): Omit<MailMessage, 'to'> {
  return {
    subject:
      change === 'added' ? 'A passkey was added to your account' : 'A passkey was removed from your account',
    text: [
      `The passkey "${name}" was ${change} ${change === 'added' ? 'to' : 'from'} your account in ${workspace}.`,
      `Your passkeys: ${settingsUrl}`,
      '',
      'If this was not you, remove any passkey you do not know and tell your admins at once.',
    ].join('\n'),
    html: html`<p>
        The passkey “${name}” was ${change} ${change === 'added' ? 'to' : 'from'} your account in
        ${workspace}.
      </p>
      <p><a href="${settingsUrl}">Your passkeys</a></p>
      <p>
        If this was not you, remove any passkey you do not know and tell your admins at once.
      </p>`.toString(),
  };
}

/**
 * Someone else changed where the member's approval requests go (phone, Slack or Teams user id): said to
 * the member's own e-mail, so that an address they did not set shows at once.
 */
export function addressesChangedMail(
  workspace: string,
  changedBy: string,
  changes: { label: string; from: string | null; to: string | null }[],
  settingsUrl: string,
): Omit<MailMessage, 'to'> {
  const line = (c: (typeof changes)[number]) =>
    `${c.label}: ${c.from ?? 'none'} → ${c.to ?? 'none (removed)'}`;
  return {
    subject: 'Your addresses for approval requests were changed',
    text: [
      `${changedBy} changed where your approval requests go in ${workspace}:`,
      ...changes.map((c) => `- ${line(c)}`),
      '',
      `Your settings: ${settingsUrl}`,
      '',
      'If these are not yours, set your own on your Settings page and tell your admins at once.',
    ].join('\n'),
    html: html`<p>${changedBy} changed where your approval requests go in ${workspace}:</p>
      <ul>
        ${changes.map((c) => html`<li>${line(c)}</li>`)}
      </ul>
      <p><a href="${settingsUrl}">Your settings</a></p>
      <p>
        If these are not yours, set your own on your Settings page and tell your admins at once.
      </p>`.toString(),
  };
}

/** Slack mrkdwn: `&`, `<` and `>` are control characters and must be escaped. */
export const mrkdwn = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/** Inside a code block: a zero-width space after each backtick, so agent text cannot close the block. */
const codeBlock = (text: string) => `\`\`\`${mrkdwn(text).replaceAll('`', '`\u200b')}\`\`\``;

/**
 * The Slack message of a hold: while it waits, Approve and Reject buttons (their value is the hold id)
 * if it shows every argument, otherwise a Review button to `link` (the member's decision link) or
 * `reviewUrl` (the hold's page in the app); the outcome once it is decided. `approvedBy` names who
 * approved so far (four-eyes).
 */
export function slackMessage(
  brand: Branding,
  hold: Hold,
  link: string | null,
  approvedBy: string[],
  reviewUrl: string,
  asking: Asking = {},
): SlackMessage {
  const summary = channelSummary(hold, 'slack');
  const head = headline(hold);
  const blocks: unknown[] = [
    { type: 'section', text: { type: 'mrkdwn', text: `*${mrkdwn(head)}*\n${codeBlock(summary.text)}` } },
  ];
  // Only while it waits: once decided, the message shows the outcome like every other. The title says
  // what and why at a glance (issue 39).
  if (hold.status === 'pending')
    blocks.unshift(
      ...[requestTitle(hold, asking), ...askingLines(asking)].map((line) => ({
        type: 'section',
        text: { type: 'mrkdwn', text: `*${mrkdwn(line)}*` },
      })),
    );
  if (hold.status === 'pending' && !summary.complete)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `_${NOT_IN_FULL}_` } });
  else if (hold.status === 'pending' && asking.signed)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `_${SIGN_ON_PAGE}_` } });
  if (hold.status === 'pending' && asking.editable)
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `_${CHANGE_ON_PAGE}_` } });
  const facts = [`${brand.name}`, hold.status === 'pending' ? deadline(hold) : null];
  if (approvedBy.length > 0)
    facts.push(
      `approved by ${approvedBy.join(', ')} (${hold.approvalsReceived} of ${hold.approvalsRequired})`,
    );
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: mrkdwn(facts.filter(Boolean).join(' · ')) }],
  });
  // Buttons only for what the message shows whole and a press may approve (no passkey needed).
  const decides = summary.complete && !asking.signed;
  if (hold.status === 'pending') {
    blocks.push({
      type: 'actions',
      block_id: 'decision',
      elements: decides
        ? [
            {
              type: 'button',
              action_id: 'approve',
              text: { type: 'plain_text', text: 'Approve' },
              style: 'primary',
              value: hold.id,
            },
            {
              type: 'button',
              action_id: 'reject',
              text: { type: 'plain_text', text: 'Reject' },
              style: 'danger',
              value: hold.id,
            },
            ...(link
              ? [{ type: 'button', action_id: 'open', text: { type: 'plain_text', text: 'Open' }, url: link }]
              : []),
          ]
        : [
            {
              type: 'button',
              action_id: 'review',
              text: { type: 'plain_text', text: 'Review' },
              url: link ?? reviewUrl,
            },
          ],
    });
  } else {
    const by = hold.channel && hold.channel !== 'rule' ? ` (via ${hold.channel})` : '';
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `*${mrkdwn(outcomeText(hold))}*${by}` } });
  }
  // The notification text is mrkdwn too: escaped, so no `<!channel>` or disguised link gets through.
  const text = mrkdwn(
    hold.status === 'pending' ? requestTitle(hold, asking) : `${outcomeText(hold)}: ${head}`,
  );
  return { text, blocks };
}

/**
 * The SMS: short, with the link, and the reply codes when replies are on and the text shows every
 * argument; otherwise the link is to review it in full.
 */
export function smsText(hold: Hold, link: string, replyCode: string | null, asking: Asking = {}): string {
  const summary = channelSummary(hold, 'sms');
  const lead = `${askingLead(asking)}${asking.forWhom ? ` for ${asking.forWhom.name}` : ''}`;
  const start = `${lead} (${nameText(hold.connection)}): ${summary.text}`;
  if (!summary.complete) return `${start} Review it in full: ${link}`;
  if (asking.signed) return `${start} Approve it with your passkey: ${link}`;
  if (asking.editable)
    return `${start} ${link} (to change it first)${replyCode ? ` Or reply YES ${replyCode} / NO ${replyCode}.` : ''}`;
  return `${start} ${link}${replyCode ? ` Or reply YES ${replyCode} / NO ${replyCode}.` : ''}`;
}
