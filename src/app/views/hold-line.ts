/**
 * A waiting hold on one line of the inbox: tool and connection, a summary of its arguments, the agent,
 * the rule, approvals so far and the deadline. The whole line is one link that selects the hold.
 */
import { showHidden } from '../../domain/summary.ts';
import type { HoldDecisionRow } from '../../store/hold-decisions.ts';
import type { HoldLine } from '../../store/hold-lines.ts';
import { countdown, type Html, html, when } from '../html.ts';

export type LineDecision = Pick<HoldDecisionRow, 'name' | 'verdict'>;

/** `1 of 2 · Ada` for a four-eyes hold; nothing for a hold that needs one approval and has none. */
export function approvalsText(
  line: Pick<HoldLine, 'approvalsRequired' | 'approvalsReceived'>,
  decisions: readonly LineDecision[],
): string | null {
  if (line.approvalsRequired <= 1 && decisions.length === 0) return null;
  const names = decisions.filter((d) => d.verdict === 'approve').map((d) => d.name);
  return `${line.approvalsReceived} of ${line.approvalsRequired}${names.length ? ` · ${names.join(', ')}` : ''}`;
}

export interface HoldLineOptions {
  /** Where the line leads: the inbox with this hold selected. */
  href: string;
  selected: boolean;
  /** The member the reader would decide this hold for, as their delegate. */
  forWhom?: string | null;
}

export function holdLineView(
  line: HoldLine & { decisions: readonly LineDecision[] },
  { href, selected, forWhom = null }: HoldLineOptions,
): Html {
  const approvals = approvalsText(line, line.decisions);
  const agent = showHidden(line.agentLabel ?? line.agentId);
  return html`<li
    class="line${selected ? ' selected' : ''}"
    id="line-${line.id}"
    data-hold="${line.id}"
    data-waiting
  >
    <a href="${href}" ${selected ? html`aria-current="true"` : null}>
      <span class="what"
        ><strong class="tool">${showHidden(line.toolName)}</strong>
        <span class="muted">${showHidden(line.connection)}</span>${
          forWhom ? html` <span class="for-whom">for ${forWhom}</span>` : null
        }</span
      >
      <span class="summary"
        >${line.argumentsSummary === '' ? html`<span class="muted">no arguments</span>` : line.argumentsSummary}</span
      >
      <span class="who"
        ><span class="agent" title="${showHidden(line.agentId)}">${agent}</span> ·
        <span class="rule">${line.ruleName ?? 'no rule'}</span></span
      >
      ${when(approvals, () => html`<span class="approvals">${approvals}</span>`)}
      <span class="deadline"
        >${line.expiresAt === null ? 'no deadline' : countdown(line.expiresAt, true)}</span
      >
    </a>
    <p class="left-note" hidden></p>
  </li>`;
}
