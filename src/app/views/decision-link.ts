/**
 * The page a decision link opens (`/d/<token>`): a heading, why the hold waits, who decided and who
 * still can, the action in full, and last the form, so the whole action is seen before the buttons.
 */
import type { Hold } from '../../domain/hold.ts';
import type { HoldFacts } from '../../domain/hold-facts.ts';
import { shownArgumentsHash } from '../../services/decision-changes.ts';
import type { PasskeyPrompt } from '../../services/passkeys.ts';
import { type Html, html } from '../html.ts';
import { approveWithheld, type holdArguments, holdFacts } from './hold.ts';
import { changedView } from './changes.ts';
import { conditionsView } from './conditions.ts';
import { decidedInWords, type FourEyes, fourEyesView } from './four-eyes.ts';
import { passkeyField } from './passkey.ts';

const OUTCOME: Record<string, string> = {
  approved: 'This action was approved.',
  rejected: 'This action was rejected.',
  expired: 'This request expired without a decision.',
  pending: 'You have already answered; the action waits for other approvers.',
  executed: 'This action was approved and carried out.',
  failed: 'This action was approved; carrying it out failed.',
  auto_allowed: 'This action was allowed by policy.',
};

/** Why a decision sent through the link changed nothing, said on the link's page. */
const NOT_DECIDED: Record<'used' | 'already_decided', string> = {
  used: 'Not decided: you have answered through this link already.',
  already_decided: 'Not decided: you have decided this action already; each member counts once.',
};

export const notDecidedNotice = (outcome: 'used' | 'already_decided' | 'closed', hold: Hold) =>
  outcome === 'closed'
    ? `Not decided: this action ${hold.status === 'expired' ? 'expired' : `was ${hold.status.replace('_', ' ')}`} before your answer.`
    : NOT_DECIDED[outcome];

export const closedTop = (hold: Hold) => html`<h1>${OUTCOME[hold.status]}</h1>`;

export const askTop = (hold: Hold, memberName: string) =>
  html`<h1>Approve this action?</h1>
    <p>
      <strong>${hold.agentLabel ?? hold.agentId}</strong> asks to run <strong>${hold.toolName}</strong> on
      ${hold.connection}.
      <span class="muted">For ${memberName}. Opening this page decides nothing.</span>
    </p>`;

export const decidedTop = (verdict: 'approve' | 'reject', hold: Hold, comment: string) =>
  html`<div role="status">
    <h1>${decidedInWords(verdict, hold)}</h1>
    ${
      comment
        ? html`<p>Your comment:</p>
            <blockquote class="comment">${comment}</blockquote>`
        : null
    }
  </div>`;

/**
 * The way on from a link whose hold is settled for its reader: their next waiting hold (in the app,
 * which asks them to sign in first) and the inbox. Nothing of the next hold is shown here, as a link
 * forwarded to someone else must not tell them about it.
 */
export const onwardView = ({ next, waiting }: { next: { id: string } | null; waiting: number }) =>
  html`<nav class="onward" aria-label="Next">
    <ul>
      ${
        next
          ? html`<li>
              <a href="/app/holds/${next.id}">Next hold waiting for you</a>
              <span class="muted">(${waiting} waiting)</span>
            </li>`
          : html`<li>Nothing else is waiting for you.</li>`
      }
      <li><a href="/app/inbox">Open the inbox</a></li>
    </ul>
  </nav>`;

const comment = html`<label for="comment">Comment (optional)</label
  ><textarea id="comment" name="comment" maxlength="2000"></textarea>`;

/** `changes`: the boxes of Approve with changes (views/changes.ts), where the rule offers them. */
export const decisionForm = (
  token: string,
  hold: Hold,
  passkey: PasskeyPrompt | null,
  changes: Html | null = null,
) =>
  html`<form method="post" action="/d/${token}" class="decide">
    <input type="hidden" name="shown" value="${shownArgumentsHash(hold)}" />
    ${comment} ${passkeyField(passkey, changes && `/d/${token}/challenge`)} ${changes}
    <div class="buttons">
      <button type="submit" name="verdict" value="approve" class="approve">Approve</button>
      <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
    </div>
  </form>`;

/** The form for a hold too large to show whole: no Approve beside a value nobody can see. */
const rejectOnly = (token: string, fullJsonHref: string) =>
  html`<form method="post" action="/d/${token}" class="decide">
    ${approveWithheld(fullJsonHref)} ${comment}
    <div class="buttons">
      <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
    </div>
  </form>`;

export interface LinkPage {
  token: string;
  hold: Hold;
  facts: HoldFacts | null;
  fourEyes: Omit<FourEyes, 'hold'>;
  /** The arguments as the page shows them (`holdArguments`), linked in full at `/d/<token>/arguments.json`. */
  shown: ReturnType<typeof holdArguments>;
  /** Whether to say why the link's member cannot decide, if so. */
  reader: boolean;
  form: Html | null;
  /** Where to go next (`onwardView`), once the hold is settled for the reader. */
  onward: Html | null;
}

export function linkPageView(page: LinkPage, top: Html): Html {
  const { token, hold, facts, fourEyes, shown, form } = page;
  const fullJsonHref = `/d/${token}/arguments.json`;
  return html`<div class="narrow card decision-link">
    ${top} ${page.onward} ${conditionsView(facts, hold.ruleName)}
    ${fourEyesView({ hold, ...fourEyes, blocker: page.reader ? fourEyes.blocker : null })}
    ${holdFacts(hold, { withTool: true, facts, fullJsonHref, shown })} ${changedView(hold)}
    ${form && !shown.complete ? rejectOnly(token, fullJsonHref) : form}
  </div>`;
}
