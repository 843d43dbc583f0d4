/**
 * Bulk decisions and claims, in words: the confirmation that lists what would be approved or rejected
 * and its total, the holds left out and why, and the notices after a bulk decision or a claim.
 */
import { BULK_LIMIT, type BulkSkip, type BulkTotals } from '../../domain/bulk.ts';
import { showHidden } from '../../domain/summary.ts';
import type { BulkLine, BulkPreview } from '../../services/bulk-decisions.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { countdown, type Html, html, time, when } from '../html.ts';
import { csrfField } from './form-fields.ts';

/** Why a hold was left out, to the member who chose it (a claim says whose: `skippedInWords`). */
export function skipInWords(skip: Exclude<BulkSkip, 'claimed'>, line: { approvalsRequired: number }): string {
  switch (skip) {
    case 'not_found':
      return 'No such hold in this workspace.';
    case 'closed':
      return 'Decided or expired already.';
    case 'not_an_approver':
      return 'You are not among its approvers.';
    case 'already_decided':
      return 'You have decided it already; each member counts once.';
    case 'own_request':
      return 'An agent that acts for you requested it: someone else must decide it.';
    case 'not_in_bulk':
      return 'Its rule keeps it out of bulk approval: approve it on its own page.';
    case 'four_eyes':
      return `It needs ${line.approvalsRequired} approvals: approve it on its own page.`;
    case 'signed':
      return 'Its approval must be signed with your passkey: approve it on its own page.';
    case 'too_long':
      return 'Its action is too long to show whole in a list: approve it on its own page.';
    case 'changed':
      return 'An approver changed it: approve it on its own page, which shows the changes.';
    case 'frozen':
      return 'The workspace is frozen: nothing is approved until an admin unfreezes it.';
  }
}

const AMOUNT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 20 });
const plural = (count: number, one: string, many = `${one}s`) => `${count} ${count === 1 ? one : many}`;

/** `3 holds · 4,200.5 EUR · 1,200 USD · 1 without an amount` */
export function totalsInWords(totals: BulkTotals): string {
  return [
    plural(totals.count, 'hold'),
    ...totals.amounts.map(({ currency, total }) => `${AMOUNT.format(total)} ${showHidden(currency)}`),
    ...(totals.amounts.length > 0 && totals.withoutAmount > 0
      ? [`${totals.withoutAmount} without an amount`]
      : []),
  ].join(' · ');
}

const lineRow = ({ line, action }: BulkLine) =>
  html`<tr>
    <td>
      <a href="/app/holds/${line.id}">${showHidden(line.toolName)}</a>
      <span class="muted">${showHidden(line.connection)} · ${line.environment}</span>
    </td>
    <td><code class="action">${action.text}</code></td>
    <td>${showHidden(line.agentLabel ?? line.agentId)}</td>
    <td>${countdown(line.expiresAt, true)}</td>
  </tr>`;

const linesTable = (caption: string, lines: BulkLine[]) =>
  html`<table class="bulk-lines">
    <caption class="visually-hidden">
      ${caption}
    </caption>
    <thead>
      <tr>
        <th scope="col">Tool</th>
        <th scope="col">Action</th>
        <th scope="col">Agent</th>
        <th scope="col">Deadline</th>
      </tr>
    </thead>
    <tbody>
      ${lines.map(lineRow)}
    </tbody>
  </table>`;

/** Why a line of the confirmation is left out; a claim names its member and until when, in the page's zone. */
const skippedInWords = ({ line, skip, claim }: BulkLine) =>
  skip === 'claimed'
    ? html`Claimed by ${claim!.name} until ${time(claim!.until)}: theirs to decide while it lasts.`
    : skipInWords(skip!, line);

const skippedList = (preview: BulkPreview) =>
  when(
    preview.skipped.length > 0 || preview.unknown > 0,
    () =>
      html`<h2>Left as they are (${preview.skipped.length + preview.unknown})</h2>
        <ul class="bulk-skipped">
          ${preview.skipped.map(
            (skipped) =>
              html`<li>
                <a href="/app/holds/${skipped.line.id}">${skipped.line.toolName}</a> ·
                ${skipped.line.agentLabel ?? skipped.line.agentId}: ${skippedInWords(skipped)}
              </li>`,
          )}
          ${when(preview.unknown > 0, () => html`<li>${plural(preview.unknown, 'hold')}: not found.</li>`)}
        </ul>`,
  );

/** The confirmation step: what would be decided and its total, what is left out and why, and the form. */
export function bulkConfirmView(
  session: AppSession,
  preview: BulkPreview,
  form: { comment: string; back: string },
): Html {
  const approve = preview.verdict === 'approve';
  const verb = approve ? 'Approve' : 'Reject';
  const count = preview.decided.length;
  return html`<div class="card bulk-confirm">
    <h1>${count > 0 ? `${verb} ${plural(count, 'hold')}?` : `Nothing to ${verb.toLowerCase()}`}</h1>
    ${when(
      preview.capped,
      () =>
        html`<p role="note">
          Only the first ${BULK_LIMIT} of the ${preview.selected} holds chosen are here (soonest deadline
          first): decide these, then the rest.
        </p>`,
    )}
    ${
      count > 0
        ? html`<p><strong>Total:</strong> ${totalsInWords(preview.totals)}</p>
            <p class="muted">
              Each hold gets its own decision and evidence entry, as if decided on its own page.
            </p>
            ${linesTable(approve ? 'To be approved' : 'To be rejected', preview.decided)}`
        : html`<p>None of the holds chosen can be ${approve ? 'approved' : 'rejected'} here.</p>`
    }
    ${skippedList(preview)}
    <form method="post" action="/app/inbox/bulk" class="decide">
      ${csrfField(session)}
      <input type="hidden" name="verdict" value="${preview.verdict}" />
      <input type="hidden" name="step" value="decide" />
      <input type="hidden" name="back" value="${form.back}" />
      ${preview.decided.map(({ line }) => html`<input type="hidden" name="hold" value="${line.id}" />`)}
      ${when(
        count > 0,
        () =>
          html`<label for="bulk-comment">Comment (optional, on each decision)</label>
            <textarea id="bulk-comment" name="comment" maxlength="2000">${form.comment}</textarea>`,
      )}
      <div class="buttons">
        ${when(
          count > 0,
          () =>
            html`<button type="submit" class="${approve ? 'approve' : 'reject'}">
              ${verb} ${plural(count, 'hold')}
            </button>`,
        )}
        <a class="button secondary" href="${form.back}">${count > 0 ? 'Cancel' : 'Back'}</a>
      </div>
    </form>
  </div>`;
}

/**
 * A set chosen without a verdict (the inbox's "Select all … matching this filter"): approve or reject
 * them? Either leads to the confirmation first.
 */
export function bulkChoiceView(
  session: AppSession,
  selected: number,
  form: { fields: [string, string][]; back: string },
): Html {
  return html`<div class="narrow card">
    <h1>Decide ${plural(selected, 'hold')}</h1>
    <p>
      Approve or reject them? The next page lists each one and what is left out before anything is decided.
    </p>
    <form method="post" action="/app/inbox/bulk" class="decide">
      ${csrfField(session)}
      <input type="hidden" name="back" value="${form.back}" />
      ${form.fields.map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}
      <div class="buttons">
        <button type="submit" name="verdict" value="approve" class="approve">Approve…</button>
        <button type="submit" name="verdict" value="reject" class="reject">Reject…</button>
        <a class="button secondary" href="${form.back}">Cancel</a>
      </div>
    </form>
  </div>`;
}

const CLAIM_NOTICES: Record<string, string> = {
  claimed: 'You are on it: the others see that you are.',
  released: 'Released: the hold is free for anyone to take.',
  claim_taken: 'Someone else is on that hold already.',
  claim_not_yours: 'Someone else is on that hold: only they or an admin release it.',
  claim_refused: 'Not claimed: that hold no longer waits for you.',
};

/**
 * The notice after a bulk decision (`bulk_approved:12:3`: 12 decided, 3 left as they were) or a claim;
 * null for another key (the inbox's own notices).
 */
export function actionNoticeText(notice: { key: string; counts?: number[]; count?: number } | null) {
  if (!notice) return null;
  if (notice.key === 'bulk_approved' || notice.key === 'bulk_rejected') {
    const [decided = notice.count ?? 0, left = 0] = notice.counts ?? [];
    const done =
      notice.key === 'bulk_approved'
        ? `Your approval is recorded on ${plural(decided, 'hold')}.`
        : `Rejected ${plural(decided, 'hold')}.`;
    return left > 0 ? `${done} ${plural(left, 'hold was', 'holds were')} left as they were.` : done;
  }
  return CLAIM_NOTICES[notice.key] ?? null;
}

/** The inbox's and a hold page's notice: these, or one of the page's own (`notices`). */
export const inboxNoticeText = (
  notice: { key: string; counts?: number[]; count?: number } | null,
  notices: Record<string, string>,
) => actionNoticeText(notice) ?? notices[notice?.key ?? ''] ?? null;
