/**
 * The Teams message of a hold, an Adaptive Card with the same facts and the same rule as the Slack
 * message (messages.ts, `slackMessage`): Approve and Reject only while it waits and only when the card
 * shows every argument ("No decision on a summary"), a link to review it in full otherwise.
 *
 * A TextBlock renders a markdown subset (links, lists, emphasis) and clients differ in how they treat
 * backslash escapes (the mobile apps show them), so escaping cannot be relied on. Every text that is not
 * ours (agent, tool, connection, arguments, workspace and member names) goes in a TextRun instead, which
 * by the schema renders no markdown at all; TextBlocks carry only our own fixed words.
 */
import { outcomeText } from '../domain/outcome-text.ts';
import type { Hold } from '../domain/hold.ts';
import { nameText, showHidden } from '../domain/summary.ts';
import { utcText } from '../domain/time-text.ts';
import {
  type Branding,
  channelSummary,
  forWhomLine,
  type Principal,
  type Reminder,
  reminderLine,
  SIGN_ON_PAGE,
  CHANGE_ON_PAGE,
} from './messages.ts';
import type { TeamsCard } from './teams.ts';
import { requestTitle } from './titles.ts';

export const NOT_IN_FULL = 'Not every argument fits here: review it in full before deciding.';

/**
 * Text that is not ours as a TextRun: hidden characters (line breaks, bidi overrides) shown escaped, and
 * a zero-width space inside `{{` so it starts no DATE()/TIME() function.
 */
const run = (text: string, style: Record<string, unknown> = {}) => ({
  type: 'TextRun',
  text: showHidden(text).replaceAll('{{', '{\u200b{'),
  ...style,
});
const paragraph = (...inlines: ReturnType<typeof run>[]) => ({ type: 'RichTextBlock', inlines });

export interface TeamsCardOptions {
  /** Who approved so far (four-eyes). */
  approvedBy: string[];
  /** The hold's page in the app. */
  reviewUrl: string;
  /** The reader's decision link, when they have one. */
  link: string | null;
  /**
   * Closes the card for its reader while the hold still waits, with this line instead of buttons
   * (`You approved: one more approval is needed`). A decided hold's card is closed anyway.
   */
  final?: string;
  /** A reminder: how long is left and who approved so far, above the rest while the hold waits. */
  reminder?: Reminder;
  /** To a delegate: the member they decide for, likewise. */
  forWhom?: Principal;
  /** The approval must be passkey-signed: the card opens the page instead of offering buttons. */
  signed?: boolean;
  /** Its rule lets an approver change arguments first: the card says the page can. */
  editable?: boolean;
  /** An escalation step brought the reader in (said in the title). */
  escalated?: boolean;
}

export function teamsCard(brand: Branding, hold: Hold, options: TeamsCardOptions): TeamsCard {
  // The room Slack has: a card is read at a glance too.
  const summary = channelSummary(hold, 'slack');
  const pending = hold.status === 'pending';
  const open = pending && options.final === undefined;
  const head = `${nameText(hold.agentLabel ?? hold.agentId)} wants to run ${nameText(hold.toolName)} on ${nameText(hold.connection)}`;

  const body: unknown[] = [
    // As the e-mail's subject and Slack's title: the deciding values and why it is the reader's.
    ...(pending ? [paragraph(run(requestTitle(hold, options), { weight: 'Bolder', size: 'Medium' }))] : []),
    ...(options.reminder && pending
      ? [paragraph(run(reminderLine(options.reminder), { weight: 'Bolder' }))]
      : []),
    ...(options.forWhom && pending
      ? [paragraph(run(forWhomLine(options.forWhom), { weight: 'Bolder' }))]
      : []),
    paragraph(run(head, { weight: 'Bolder' })),
    paragraph(run(summary.text, { fontType: 'Monospace' })),
  ];
  if (open && !summary.complete)
    body.push({ type: 'TextBlock', text: NOT_IN_FULL, wrap: true, color: 'Warning' });
  else if (open && options.signed)
    body.push({ type: 'TextBlock', text: SIGN_ON_PAGE, wrap: true, color: 'Warning' });
  if (open && options.editable) body.push({ type: 'TextBlock', text: CHANGE_ON_PAGE, wrap: true });
  const facts = [brand.name];
  if (pending) facts.push(hold.expiresAt === null ? 'no deadline' : `decide by ${utcText(hold.expiresAt)}`);
  if (options.approvedBy.length > 0)
    facts.push(
      `approved by ${options.approvedBy.join(', ')} (${hold.approvalsReceived} of ${hold.approvalsRequired})`,
    );
  body.push(paragraph(run(facts.join(' · '), { isSubtle: true })));
  if (!pending) {
    const by = hold.channel && hold.channel !== 'rule' ? ` (via ${hold.channel})` : '';
    body.push(paragraph(run(`${outcomeText(hold)}${by}`, { weight: 'Bolder' })));
  }
  if (options.final !== undefined) body.push(paragraph(run(options.final, { weight: 'Bolder' })));

  const card: TeamsCard = {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    // Action.Execute (Universal Actions) needs 1.4.
    version: '1.4',
    body,
  };
  if (!open) return card;
  const decides = summary.complete && !options.signed;
  card.actions = decides
    ? [
        {
          type: 'Action.Execute',
          title: 'Approve',
          verb: 'approve',
          data: { hold: hold.id },
          style: 'positive',
        },
        {
          type: 'Action.Execute',
          title: 'Reject',
          verb: 'reject',
          data: { hold: hold.id },
          style: 'destructive',
        },
        ...(options.link ? [{ type: 'Action.OpenUrl', title: 'Open', url: options.link }] : []),
      ]
    : [{ type: 'Action.OpenUrl', title: 'Review', url: options.link ?? options.reviewUrl }];
  return card;
}
