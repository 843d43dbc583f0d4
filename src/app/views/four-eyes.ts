/**
 * Four-eyes context of a hold: who decided so far (with their comments), who can still decide, and,
 * for the reader who cannot, why.
 */
import { approversInWords, type DecisionBlocker } from '../../domain/four-eyes.ts';
import type { Hold, Verdict } from '../../domain/hold.ts';
import { type Html, html, time, when } from '../html.ts';

export interface DecisionSeen {
  name: string;
  email: string;
  verdict: string;
  comment: string | null;
  channel: string;
  decidedAt: number;
  /** The member a delegate decided for. */
  onBehalfOfName?: string | null;
}

export interface FourEyes {
  hold: Pick<Hold, 'status' | 'approvers' | 'approvalsRequired' | 'approvalsReceived'>;
  /** Every member's decision so far, oldest first. */
  decisions: DecisionSeen[];
  /** The members who may still decide (approvers who have not; delegates with whom they would decide for). */
  remaining: { name: string; email: string; onBehalfOf?: string | null }[];
  /** Why the reader cannot decide; null when they can. */
  blocker: DecisionBlocker | null;
}

const PAST: Record<string, string> = { approve: 'approved', reject: 'rejected' };

/** Why the reader cannot decide, in words. */
export function blockerInWords(blocker: DecisionBlocker, hold: FourEyes['hold']): string {
  switch (blocker) {
    case 'viewer':
      return 'You are a viewer: viewers see holds but do not decide.';
    case 'not_an_approver':
      return `You are not among the approvers of this hold: it waits for ${approversInWords(hold.approvers)}.`;
    case 'closed':
      return `This hold is ${hold.status.replace('_', ' ')} already.`;
    case 'already_decided':
      return 'You have decided this hold already; each member counts once.';
    case 'own_request':
      return 'An agent that acts for you requested this action: someone else must decide it.';
  }
}

/** After a decision: `You approved. 1 of 2 — waiting for finance.` */
export function decidedInWords(verdict: Verdict, hold: FourEyes['hold']): string {
  const you = `You ${PAST[verdict]}.`;
  if (hold.status !== 'pending') return `${you} The action is ${hold.status.replace('_', ' ')}.`;
  return `${you} ${hold.approvalsReceived} of ${hold.approvalsRequired} — waiting for ${approversInWords(hold.approvers)}.`;
}

/** `Dan (for Ann)`: a delegate says whom they would decide for. */
const remainingName = (m: FourEyes['remaining'][number]) =>
  m.onBehalfOf ? `${m.name} (for ${m.onBehalfOf})` : m.name;

export function fourEyesView({ hold, decisions, remaining, blocker }: FourEyes): Html {
  const pending = hold.status === 'pending';
  return html`<section class="four-eyes" aria-label="Approvals">
    <p class="line">
      <strong class="count">${hold.approvalsReceived} of ${hold.approvalsRequired}</strong>
      approval${hold.approvalsRequired === 1 ? '' : 's'}${pending ? html` · waiting for ${approversInWords(hold.approvers)}` : null}
    </p>
    ${when(
      decisions.length > 0,
      () =>
        html`<ul class="decisions">
          ${decisions.map(
            (d) =>
              html`<li>
                <strong>${d.name}</strong> ${PAST[d.verdict] ?? d.verdict}${
                  d.onBehalfOfName ? html` for <strong>${d.onBehalfOfName}</strong>` : null
                }
                ${time(d.decidedAt)} via ${d.channel}
                ${d.comment ? html`<blockquote>${d.comment}</blockquote>` : null}
              </li>`,
          )}
        </ul>`,
    )}
    ${when(
      pending && remaining.length > 0,
      () => html`<p class="muted">Can still decide: ${remaining.map(remainingName).join(', ')}</p>`,
    )}
    ${when(blocker, () => html`<p class="why-not" role="note">${blockerInWords(blocker!, hold)}</p>`)}
  </section>`;
}
