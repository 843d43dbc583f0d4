/**
 * What approvers receive (decisions.md: every notification names the tool and the connection and
 * summarizes the arguments): the e-mails, the Slack message and the SMS for a hold that waits, and
 * for its outcome. Values are escaped by the `html` tag; Slack text escapes its control characters.
 */
import { summarize } from '../domain/envelope.ts';
import type { Hold } from '../domain/hold.ts';
import { html } from '../app/html.ts';
import type { MailMessage } from './email.ts';
import type { SlackMessage } from './slack.ts';

export interface Branding {
  name: string;
  accentColor: string | null;
  logoUrl: string | null;
}

const OUTCOME: Record<string, string> = {
  approved: 'Approved',
  rejected: 'Rejected',
  expired: 'Expired: no decision before the deadline',
  executed: 'Approved and carried out',
  failed: 'Approved; carrying it out failed',
};

export const outcomeOf = (hold: Hold) => OUTCOME[hold.status] ?? hold.status;

const deadline = (hold: Hold) =>
  hold.expiresAt === null ? 'no deadline' : `decide by ${new Date(hold.expiresAt).toUTCString()}`;

function frame(brand: Branding, title: string, body: ReturnType<typeof html>) {
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

export function requestMail(brand: Branding, hold: Hold, link: string): Omit<MailMessage, 'to'> {
  const summary = summarize(hold.toolName, hold.arguments);
  const subject = `Approval needed: ${hold.toolName} on ${hold.connection}`;
  const text = [
    `${hold.agentLabel ?? hold.agentId} wants to run ${hold.toolName} on ${hold.connection}.`,
    '',
    summary,
    '',
    `Open to approve or reject (${deadline(hold)}):`,
    link,
    '',
    `— ${brand.name}`,
  ].join('\n');
  const body = html`<p>
      <strong>${hold.agentLabel ?? hold.agentId}</strong> wants to run <code>${hold.toolName}</code> on
      <strong>${hold.connection}</strong>.
    </p>
    <pre style="background: #f4f4f5; padding: 0.75rem; white-space: pre-wrap">${summary}</pre>
    <p>${deadline(hold)}.</p>
    <p><a href="${link}" style="font-weight: bold">Open to approve or reject</a></p>
    <p style="color: #666; font-size: 0.875rem">Opening the link does not decide anything.</p>`;
  return { subject, text, html: frame(brand, subject, body) };
}

export function outcomeMail(brand: Branding, hold: Hold): Omit<MailMessage, 'to'> {
  const outcome = outcomeOf(hold);
  const subject = `${outcome.split(':')[0]}: ${hold.toolName} on ${hold.connection}`;
  const by = hold.channel && hold.channel !== 'rule' ? ` (decided via ${hold.channel})` : '';
  const text = [`${outcome}${by}.`, '', summarize(hold.toolName, hold.arguments), '', `— ${brand.name}`].join(
    '\n',
  );
  const body = html`<p><strong>${outcome}</strong>${by}.</p>
    <pre style="background: #f4f4f5; padding: 0.75rem; white-space: pre-wrap">
${summarize(hold.toolName, hold.arguments)}</pre>`;
  return { subject, text, html: frame(brand, subject, body) };
}

/** Slack mrkdwn: `&`, `<` and `>` are control characters and must be escaped. */
const mrkdwn = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

/**
 * The Slack message of a hold: with Approve and Reject buttons while it waits (their value is the
 * hold id), the outcome once it is decided. `received` names who approved so far (four-eyes).
 */
export function slackMessage(
  brand: Branding,
  hold: Hold,
  link: string | null,
  approvedBy: string[],
): SlackMessage {
  const summary = summarize(hold.toolName, hold.arguments);
  const headline = `${hold.agentLabel ?? hold.agentId} wants to run ${hold.toolName} on ${hold.connection}`;
  const blocks: unknown[] = [
    {
      type: 'section',
      text: { type: 'mrkdwn', text: `*${mrkdwn(headline)}*\n\`\`\`${mrkdwn(summary)}\`\`\`` },
    },
  ];
  const facts = [`${brand.name}`, hold.status === 'pending' ? deadline(hold) : null];
  if (approvedBy.length > 0)
    facts.push(
      `approved by ${approvedBy.join(', ')} (${hold.approvalsReceived} of ${hold.approvalsRequired})`,
    );
  blocks.push({
    type: 'context',
    elements: [{ type: 'mrkdwn', text: mrkdwn(facts.filter(Boolean).join(' · ')) }],
  });
  if (hold.status === 'pending') {
    blocks.push({
      type: 'actions',
      block_id: 'decision',
      elements: [
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
      ],
    });
  } else {
    const by = hold.channel && hold.channel !== 'rule' ? ` (via ${hold.channel})` : '';
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: `*${mrkdwn(outcomeOf(hold))}*${by}` } });
  }
  // The notification text is mrkdwn too: escaped, so no `<!channel>` or disguised link gets through.
  const text = mrkdwn(
    hold.status === 'pending' ? `Approval needed: ${headline}` : `${outcomeOf(hold)}: ${headline}`,
  );
  return { text, blocks };
}

/** The SMS: short, with the link, and the reply codes when replies are on. */
export function smsText(hold: Hold, link: string, replyCode: string | null): string {
  const summary = summarize(hold.toolName, hold.arguments).slice(0, 80);
  const reply = replyCode ? ` Or reply YES ${replyCode} / NO ${replyCode}.` : '';
  return `Approval needed (${hold.connection}): ${summary} ${link}${reply}`;
}
