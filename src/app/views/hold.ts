/** How a hold is shown to a person, in the inbox, on its page and behind a decision link. */
import type { Hold } from '../../domain/hold.ts';
import type { HoldFacts } from '../../domain/hold-facts.ts';
import { countdown, html, json, time, when } from '../html.ts';
import { type ArgumentsShown, argumentsShown, argumentsView } from './arguments.ts';
import { heldArguments } from './conditions.ts';

export interface HoldFactsOptions {
  withTool?: boolean;
  /** What the deciding rule saw (`submissionFacts`): the arguments it looked at are marked. */
  facts?: HoldFacts | null;
  /** The full arguments as JSON, linked when they are too large to show whole. */
  fullJsonHref?: string | null;
  /** The arguments as `holdArguments` showed them, when the page needed to know whether they are whole. */
  shown?: ArgumentsShown;
}

/**
 * The arguments as a hold's page shows them, the values the deciding rule looked at first; `complete`
 * says whether every value is on the page in full, which a page needs before it offers Approve.
 */
export const holdArguments = (
  hold: Pick<Hold, 'arguments'>,
  { facts = null, fullJsonHref = null }: Pick<HoldFactsOptions, 'facts' | 'fullJsonHref'> = {},
) => argumentsShown(hold.arguments, { highlight: heldArguments(facts), fullJsonHref });

/** Context as submitted, while it is of a readable size; a larger one is shown in part, as a tree. */
const CONTEXT_SHOWN = 20_000;
const contextView = (context: Record<string, unknown>) =>
  JSON.stringify(context).length <= CONTEXT_SHOWN
    ? json(context)
    : argumentsView(context, { budget: CONTEXT_SHOWN });

/**
 * Said where Approve would be when the arguments are too large to show whole: nobody approves a value
 * nobody can see on the page. Reject stays.
 */
export const approveWithheld = (fullJsonHref: string) =>
  html`<p class="approve-withheld" role="note">
    Approve is not offered: some values are too long for this page (see above). Read them all in the
    <a href="${fullJsonHref}" download>full JSON</a>; you can still reject.
  </p>`;

/** Why a decision form sent anyway for such a hold is refused. */
export const TOO_LARGE_TO_APPROVE =
  'Some values of this action are too long to show on its page, so it cannot be approved there. You can still reject it.';

export function holdFacts(
  hold: Hold,
  { withTool = false, facts = null, fullJsonHref = null, shown }: HoldFactsOptions = {},
) {
  return html`<dl class="facts">
    ${when(
      withTool,
      () =>
        html`<dt>Tool</dt>
          <dd><strong>${hold.toolName}</strong></dd>`,
    )}
    <dt>Connection</dt>
    <dd>${hold.connection}</dd>
    <dt>Agent</dt>
    <dd>
      ${hold.agentLabel ? html`${hold.agentLabel} (<code>${hold.agentId}</code>)` : html`<code>${hold.agentId}</code>`}
    </dd>
    <dt>Rule</dt>
    <dd>${hold.ruleName ?? '—'}</dd>
    <dt>Requested</dt>
    <dd>${time(hold.createdAt)}</dd>
    ${when(
      hold.status === 'pending',
      () =>
        html`<dt>Deadline</dt>
          <dd>${countdown(hold.expiresAt)}</dd>`,
    )}
    ${when(
      withTool && hold.approvalsRequired > 1,
      () =>
        html`<dt>Approvals</dt>
          <dd>${hold.approvalsReceived} of ${hold.approvalsRequired}</dd>`,
    )}
    <dt>Arguments</dt>
    <dd>${(shown ?? holdArguments(hold, { facts, fullJsonHref })).html}</dd>
    ${when(
      Object.keys(hold.context).length > 0,
      () =>
        html`<dt>Context</dt>
          <dd>${contextView(hold.context)}</dd>`,
    )}
  </dl>`;
}
