/**
 * One hold in full, as the inbox shows the selected hold and its own page shows it: why it waits,
 * four-eyes, the action, and the decision form when the reader may decide. A live update marks the
 * panel in place (`.left-note`) when the hold is decided elsewhere; it never replaces it.
 */
import { outcomeUnknown } from '../../domain/envelope.ts';
import { decidingText, moneyText, payeeText } from '../../domain/deciding-values.ts';
import type { Hold } from '../../domain/hold.ts';
import type { HoldFacts } from '../../domain/hold-facts.ts';
import { outcomeText } from '../../domain/outcome-text.ts';
import { summarizeAction } from '../../domain/summary.ts';
import type { ClaimShown } from '../../services/claims.ts';
import { shownArgumentsHash } from '../../services/decision-changes.ts';
import type { FollowUpLogEntry } from '../../services/follow-up-log.ts';
import type { PasskeyPrompt } from '../../services/passkeys.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { passkeyField } from './passkey.ts';
import { type Html, html, time, when } from '../html.ts';
import { approveWithheld, holdArguments, holdFacts } from './hold.ts';
import { changeBoxes, changedView } from './changes.ts';
import { conditionsView } from './conditions.ts';
import { followUpsView } from './follow-ups.ts';
import { csrfField } from './form-fields.ts';
import { type FourEyes, fourEyesView } from './four-eyes.ts';

export interface HoldPanel {
  hold: Hold;
  facts: HoldFacts | null;
  fourEyes: Omit<FourEyes, 'hold'>;
  session: AppSession;
  /** What its reminders and escalation steps did, oldest first. */
  followUps: readonly FollowUpLogEntry[];
  /** The member the reader would decide for, as their delegate, and until when they are away. */
  delegation: { name: string; until: number } | null;
  /** Where the decision returns to (a path of the app), and the hold to select there next. */
  back: string;
  next: string | null;
  /** The approve button's passkey prompt, when the hold needs a signed approval. */
  passkey?: PasskeyPrompt | null;
  /** Who said "I'm on it" for this hold, and until when. */
  claim?: ClaimShown | null;
  /** The arguments its rule lets an approver change (docs/rules.md, "Approve with changes"). */
  editable?: readonly string[];
}

/** About a line of text: what the decision bar shows of the arguments when no amount or payee is named. */
const DECIDING_LENGTH = 60;

/** What a confirmation names: the action, cut to a line. */
export const actionLine = (hold: Pick<Hold, 'toolName' | 'arguments'>) =>
  summarizeAction(hold.toolName, hold.arguments, 120).text;

const fullJsonHrefOf = (hold: Pick<Hold, 'id'>) => `/app/holds/${hold.id}/arguments.json`;

const statusBadge = (hold: Hold) =>
  html`<span class="status ${hold.status}">${hold.status.replace('_', ' ')}</span>`;

/** `whole`: every argument is on the page in full; otherwise no Approve (views/hold.ts, approveWithheld). */
function decisionForm(
  { hold, session, back, next, delegation, passkey, editable }: HoldPanel,
  whole: boolean,
): Html {
  const agent = hold.agentLabel ?? hold.agentId;
  const changes = whole ? changeBoxes(hold, editable ?? []) : null;
  return html`<form
    method="post"
    action="/app/holds/${hold.id}/decide"
    class="decide"
    data-action="${actionLine({ toolName: hold.toolName, arguments: hold.changedArguments ?? hold.arguments })}"
    data-agent="${agent}"
  >
    <input type="hidden" name="_csrf" value="${session.csrfToken}" />
    <input type="hidden" name="back" value="${back}" />
    <input type="hidden" name="shown" value="${shownArgumentsHash(hold)}" />
    ${passkeyField(passkey ?? null, changes && `/app/holds/${hold.id}/challenge`)}
    ${when(next, () => html`<input type="hidden" name="next" value="${next}" />`)}
    ${when(
      delegation,
      () =>
        html`<p class="away-note">
          You decide for <strong>${delegation!.name}</strong>, who is away until ${time(delegation!.until)}.
        </p>`,
    )}
    <label for="comment-${hold.id}">Comment (optional)</label>
    <textarea id="comment-${hold.id}" name="comment" maxlength="2000"></textarea>
    ${whole ? null : approveWithheld(fullJsonHrefOf(hold))} ${changes}
    <div class="buttons decision-bar">
      <span class="deciding">${decidingValues(hold.changedArguments ?? hold.arguments)}</span>
      ${whole ? html`<button type="submit" name="verdict" value="approve" class="approve">Approve</button>` : null}
      <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
    </div>
  </form>`;
}

/** What the decision bar shows beside its buttons, kept in view on a phone: `1,200 EUR · Globex`. */
function decidingValues(args: Hold['arguments']): string {
  const named = [moneyText(args), payeeText(args)].filter(Boolean).join(' · ');
  return named || decidingText(args, [], DECIDING_LENGTH).text;
}

/** "I'm on it" (a claim shown to the other approvers), or its release by the claimer or an admin. */
function claimForm({ hold, session, back, claim }: HoldPanel): Html {
  const mine = claim?.memberId === session.member.id;
  const release = claim && (mine || session.member.role === 'admin');
  return html`<form
    method="post"
    action="/app/holds/${hold.id}/${release ? 'release' : 'claim'}"
    class="claim"
  >
    ${csrfField(session)}
    <input type="hidden" name="back" value="${back}" />
    ${when(claim, () => html`<span class="claimed">${mine ? 'You are' : `${claim!.name} is`} on it until ${time(claim!.until)}</span>`)}
    ${when(!claim || release, () => html`<button type="submit" class="secondary">${release ? 'Release' : "I'm on it"}</button>`)}
  </form>`;
}

export function holdPanelView(panel: HoldPanel): Html {
  const { hold, facts, fourEyes } = panel;
  const canDecide = hold.status === 'pending' && fourEyes.blocker === null;
  const shown = holdArguments(hold, { facts, fullJsonHref: fullJsonHrefOf(hold) });
  return html`<article
    class="card hold"
    id="hold-${hold.id}"
    data-hold="${hold.id}"
    ${canDecide ? html`data-waiting` : null}
    aria-labelledby="title-${hold.id}"
  >
    <header>
      <h2 id="title-${hold.id}"><a href="/app/holds/${hold.id}">${hold.toolName}</a></h2>
      <span>${statusBadge(hold)}</span>
    </header>
    <p class="left-note" role="status" hidden></p>
    ${conditionsView(facts, hold.ruleName)} ${fourEyesView({ hold, ...fourEyes })}
    ${followUpsView(hold.id, panel.followUps)}
    ${holdFacts(hold, { facts, fullJsonHref: fullJsonHrefOf(hold), shown })} ${changedView(hold)}
    ${when(
      hold.verdict !== null,
      () =>
        html`<p>
          Outcome: <strong>${outcomeText(hold)}</strong>, ${hold.verdict} via
          ${hold.channel}${hold.reason ? html` — ${hold.reason}` : null}
          ${
            outcomeUnknown(hold)
              ? html`<br />The call was sent and its answer never came: it may or may not have happened. Check
                  in the upstream system.`
              : null
          }
        </p>`,
    )}
    ${when(canDecide, () => claimForm(panel))} ${when(canDecide, () => decisionForm(panel, shown.complete))}
    <p class="muted">Reference <code>${hold.id}</code> · environment ${hold.environment}</p>
  </article>`;
}
