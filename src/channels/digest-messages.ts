/**
 * A digest (issue 39): the holds a member was asked to decide within their digest window, in one
 * message per channel. Each hold is a line with its deciding values, why it is the reader's, its
 * deadline and its own decision link (`/d/<token>`: it decides that hold and no other). A line is a
 * summary, so no channel offers a one-click decision on it (decisions.md, "No decision on a summary"):
 * every line shown links to the hold's decision page. An SMS has room for the count and the inbox only.
 */
import { decidingText } from '../domain/deciding-values.ts';
import type { Hold } from '../domain/hold.ts';
import { nameText, showHidden } from '../domain/summary.ts';
import { utcText } from '../domain/time-text.ts';
import { html } from '../markup/html.ts';
import type { MailMessage } from './email.ts';
import { type Asking, type Branding, frame, mrkdwn } from './messages.ts';
import type { SlackMessage } from './slack.ts';
import type { TeamsCard } from './teams.ts';
import { actionTitle, reasonText } from './titles.ts';

/** One hold of a digest, and why it is its reader's. */
export interface DigestLine {
  hold: Hold;
  asking: Asking;
}

/** A line shown with its reader's decision link. */
export interface DigestEntry extends DigestLine {
  link: string;
}

/** Characters of the arguments each line shows (in deciding order: the amount before a memo). */
const LINE_ARGUMENTS = 200;

/** Lines a Slack message or Teams card lists (Slack takes 50 blocks); the inbox has the rest. */
export const CHAT_LINES = 20;

/**
 * The lines a digest on the channel shows with their decision links: every line of a mail, those a chat
 * message lists, none of a text. Only these get a link: one nobody sees would be a live secret for nothing.
 */
export function linkedLines<T extends DigestLine>(
  channel: 'email' | 'sms' | 'slack' | 'teams',
  lines: T[],
): T[] {
  if (channel === 'email') return lines;
  return channel === 'sms' ? [] : lines.slice(0, CHAT_LINES);
}

/** `10:40 UTC`, with the date when it is another day than `now`; in the reader's zone when they set one. */
function clockText(at: number, now: number, zone: string | null): string {
  if (!zone)
    return utcText(at).slice(0, 10) === utcText(now).slice(0, 10) ? utcText(at).slice(11) : utcText(at);
  const day = (ms: number) =>
    new Intl.DateTimeFormat('en-CA', { timeZone: zone, dateStyle: 'short' }).format(ms);
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    hourCycle: 'h23',
    ...(day(at) === day(now) ? {} : { year: 'numeric', month: '2-digit', day: '2-digit' }),
    hour: '2-digit',
    minute: '2-digit',
  }).format(at);
  return `${parts.replace(',', '')} ${zone}`;
}

/** `decide by 14:00 Europe/Berlin`: a line's deadline, as the digest's title writes times. */
const dueText = (hold: Hold, now: number, zone: string | null) =>
  hold.expiresAt === null ? 'no deadline' : `decide by ${clockText(hold.expiresAt, now, zone)}`;

/** `5 holds wait for you — 3 escalated, 1 reminder, due from 10:40 UTC`. */
export function digestTitle(lines: DigestLine[], now: number, zone: string | null): string {
  const count = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
  const escalated = lines.filter((line) => line.asking.escalated).length;
  const reminders = lines.filter((line) => line.asking.reminder).length;
  const deadlines = lines.flatMap(({ hold }) => (hold.expiresAt === null ? [] : [hold.expiresAt]));
  const parts = [
    escalated > 0 ? `${escalated} escalated` : null,
    reminders > 0 ? count(reminders, 'reminder') : null,
    deadlines.length > 0 ? `due from ${clockText(Math.min(...deadlines), now, zone)}` : null,
  ].filter(Boolean);
  const lead = `${count(lines.length, 'hold')} ${lines.length === 1 ? 'waits' : 'wait'} for you`;
  return parts.length > 0 ? `${lead} — ${parts.join(', ')}` : lead;
}

/** The arguments in deciding order, cut to a line: `amount=31496.75, currency="EUR", memo="…"`. */
const argumentsLine = (hold: Hold) => decidingText(hold.arguments, [], LINE_ARGUMENTS).text;

/** `"Billing bot" on SDK`: who asks and where, agent text quoted unless a plain name. */
const askedBy = (hold: Hold) =>
  `${nameText(hold.agentLabel ?? hold.agentId)} on ${nameText(hold.connection)}`;

export function digestMail(
  brand: Branding,
  entries: DigestEntry[],
  now: number,
  zone: string | null,
): Omit<MailMessage, 'to'> {
  const subject = digestTitle(entries, now, zone);
  const text = [
    `${subject}. Each link opens one of them, to approve or reject it (opening decides nothing).`,
    ...entries.flatMap(({ hold, link, asking }) => [
      '',
      `${actionTitle(hold)} — ${reasonText(hold, asking)}`,
      `${askedBy(hold)}: ${argumentsLine(hold)}`,
      `${dueText(hold, now, zone)}: ${link}`,
    ]),
    '',
    `— ${brand.name}`,
  ].join('\n');
  const body = html`<p>
      Each link opens one of them, to approve or reject it. Opening a link decides nothing.
    </p>
    <ol>
      ${entries.map(
        ({ hold, link, asking }) =>
          html`<li style="margin-bottom: 0.75rem">
            <a href="${link}" style="font-weight: bold">${actionTitle(hold)}</a> —
            ${reasonText(hold, asking)}<br />
            <span style="color: #444">${askedBy(hold)}: <code>${argumentsLine(hold)}</code></span
            ><br />
            <span style="color: #666; font-size: 0.875rem">${dueText(hold, now, zone)}</span>
          </li>`,
      )}
    </ol>`;
  return { subject, text, html: frame(brand, subject, body) };
}

/**
 * Slack: the title, then a line per hold shown (`linkedLines`) linking to its decision page (no buttons:
 * each is a summary), and how many more the inbox has.
 */
export function slackDigest(
  brand: Branding,
  lines: DigestLine[],
  shown: DigestEntry[],
  inboxUrl: string,
  now: number,
  zone: string | null,
): SlackMessage {
  const title = digestTitle(lines, now, zone);
  const more = lines.length - shown.length;
  const section = (text: string) => ({ type: 'section', text: { type: 'mrkdwn', text } });
  // A link's label is escaped mrkdwn, and `|` ends no label there once `>` cannot appear in it.
  const line = ({ hold, link, asking }: DigestEntry) =>
    section(
      `<${link}|${mrkdwn(actionTitle(hold)).replaceAll('|', '¦')}> — ${mrkdwn(reasonText(hold, asking))}\n` +
        `${mrkdwn(askedBy(hold))} · ${mrkdwn(dueText(hold, now, zone))}`,
    );
  const blocks: unknown[] = [section(`*${mrkdwn(title)}*`), ...shown.map(line)];
  if (more > 0) blocks.push(section(`<${inboxUrl}|${more} more in your inbox>`));
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: mrkdwn(brand.name) }] });
  return { text: mrkdwn(title), blocks };
}

/** Teams: the same lines on a card, each opening its hold's decision page. */
export function teamsDigest(
  brand: Branding,
  lines: DigestLine[],
  shown: DigestEntry[],
  inboxUrl: string,
  now: number,
  zone: string | null,
): TeamsCard {
  const more = lines.length - shown.length;
  // Plain text runs: agent text is never read as markdown, and `{{` starts no function.
  const run = (text: string, style: Record<string, unknown> = {}) => ({
    type: 'TextRun',
    text: showHidden(text).replaceAll('{{', '{\u200b{'),
    ...style,
  });
  const paragraph = (...inlines: ReturnType<typeof run>[]) => ({ type: 'RichTextBlock', inlines });
  const body: unknown[] = [paragraph(run(digestTitle(lines, now, zone), { weight: 'Bolder' }))];
  for (const { hold, link, asking } of shown) {
    body.push(
      paragraph(
        run(actionTitle(hold), { weight: 'Bolder', selectAction: { type: 'Action.OpenUrl', url: link } }),
        run(` — ${reasonText(hold, asking)}`),
      ),
      paragraph(run(`${askedBy(hold)} · ${dueText(hold, now, zone)}`, { isSubtle: true })),
    );
  }
  body.push(paragraph(run(brand.name, { isSubtle: true })));
  return {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.4',
    body,
    actions: [
      {
        type: 'Action.OpenUrl',
        title: more > 0 ? `${more} more: open your inbox` : 'Open your inbox',
        url: inboxUrl,
      },
    ],
  };
}

/** SMS: the count and the inbox (a text cannot list twenty holds). */
export function smsDigest(lines: DigestLine[], inboxUrl: string, now: number, zone: string | null): string {
  return `${digestTitle(lines, now, zone)}. Open your inbox: ${inboxUrl}`;
}
