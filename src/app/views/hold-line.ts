/**
 * A waiting hold on one line of the inbox: tool and connection, its arguments (the ones the rule looks
 * at and money first), the agent, the rule, why it is the reader's, approvals so far and the deadline.
 * The line is one link that selects the hold, beside a checkbox that picks it for a bulk decision.
 */
import { cut, showHidden } from '../../domain/summary.ts';
import type { WhyYou } from '../../services/inbox.ts';
import type { HoldDecisionRow } from '../../store/hold-decisions.ts';
import type { HoldLine } from '../../store/hold-lines.ts';
import { countdown, type Html, html, time, when } from '../html.ts';

export type LineDecision = Pick<HoldDecisionRow, 'name' | 'verdict'>;

/** How much of an incomplete summary names the line to a screen reader and to the script (`data-values`). */
const SHORT_VALUES = 80;

/**
 * Whether a stored summary shows every argument in full: one that was cut ends with `+2 more fields`
 * or has a value cut short (`…`). A value of the agent's own with a `…` in it counts as cut: the safe
 * side, since the keys approve from the line only what it shows whole ("No decision on a summary").
 */
export const summaryComplete = (summary: string) =>
  !summary.includes('…') && !/\+\d+ more fields?$/.test(summary);

/** `1 of 2 · Ada` for a four-eyes hold; nothing for a hold that needs one approval and has none. */
export function approvalsText(
  line: Pick<HoldLine, 'approvalsRequired' | 'approvalsReceived'>,
  decisions: readonly LineDecision[],
): string | null {
  if (line.approvalsRequired <= 1 && decisions.length === 0) return null;
  const names = decisions.filter((d) => d.verdict === 'approve').map((d) => d.name);
  return `${line.approvalsReceived} of ${line.approvalsRequired}${names.length ? ` · ${names.join(', ')}` : ''}`;
}

/** Why the hold is the reader's, in a few words: `approver of Transfers`, `for Ann, away`. */
export function whyYouText(why: WhyYou): Html | string {
  switch (why.kind) {
    case 'delegated':
      return `for ${why.name}, away`;
    case 'escalated':
      return html`escalated to you at ${time(why.at)}`;
    case 'four_eyes':
      return 'second approval (four-eyes)';
    case 'new_tool':
      return 'admin: new tool';
    case 'approver':
      return why.rule === null ? 'approver' : `approver of ${showHidden(why.rule)}`;
  }
}

export interface HoldLineOptions {
  /** Where the line leads: the inbox with this hold selected. */
  href: string;
  selected: boolean;
  /** The member who said "I'm on it", while their claim holds. */
  claimedBy?: string | null;
}

export function holdLineView(
  line: HoldLine & { decisions: readonly LineDecision[]; why: WhyYou },
  { href, selected, claimedBy = null }: HoldLineOptions,
): Html {
  const approvals = approvalsText(line, line.decisions);
  const agent = showHidden(line.agentLabel ?? line.agentId);
  const tool = showHidden(line.toolName);
  const complete = summaryComplete(line.argumentsSummary);
  const values = complete ? line.argumentsSummary : cut(line.argumentsSummary, SHORT_VALUES);
  return html`<li
    class="line${selected ? ' selected' : ''}"
    id="line-${line.id}"
    data-hold="${line.id}"
    data-values="${values}"
    ${when(complete, () => html`data-complete`)}
    ${when(claimedBy, () => html`data-claimed-by="${claimedBy}"`)}
    data-waiting
  >
    <input
      type="checkbox"
      class="pick"
      name="hold"
      value="${line.id}"
      form="bulk"
      aria-label="Select ${tool} ${values}"
    />
    <a href="${href}" ${selected ? html`aria-current="true"` : null}>
      <span class="what"
        ><strong class="tool">${tool}</strong> <span class="muted">${showHidden(line.connection)}</span></span
      >
      <span class="summary"
        >${line.argumentsSummary === '' ? html`<span class="muted">no arguments</span>` : line.argumentsSummary}</span
      >
      <span class="who"
        ><span class="agent" title="${showHidden(line.agentId)}">${agent}</span> ·
        <span class="rule">${line.ruleName === null ? 'no rule' : showHidden(line.ruleName)}</span></span
      >
      <span class="why" data-why="${line.why.kind}">${whyYouText(line.why)}</span>
      ${when(claimedBy, () => html`<span class="claimed">${claimedBy} is on it</span>`)}
      ${when(approvals, () => html`<span class="approvals">${approvals}</span>`)}
      <span class="deadline"
        >${line.expiresAt === null ? 'no deadline' : countdown(line.expiresAt, true)}</span
      >
    </a>
    <p class="left-note" hidden></p>
  </li>`;
}
