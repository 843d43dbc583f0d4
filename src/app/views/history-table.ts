/**
 * History's results: how many holds match and how they ended, the CSV of them all, one row per hold
 * (who decided, their comments) and the numbered pages.
 */
import { cut, showHidden } from '../../domain/summary.ts';
import {
  commentsOf,
  decidedBy,
  HISTORY_PAGE_SIZE,
  type HistoryPage,
  type HistoryRow,
  OUTCOMES,
} from '../../services/history.ts';
import { type Html, html, time, when } from '../html.ts';
import { historyHref, type HistoryValues, isFiltered } from './history.ts';

/** Comments longer than this are cut in the row; the hold's page has them whole. */
export const COMMENT_LENGTH = 120;

const count = (n: number) => n.toLocaleString('en-US');

const statusBadge = (status: string) =>
  html`<span class="status ${status}">${status.replace('_', ' ')}</span>`;

/** `1.2 MB`: the size of large arguments, so a short summary of a huge payload does not mislead. */
const size = (characters: number) =>
  characters >= 1_000_000
    ? `${(characters / 1_000_000).toFixed(1)} MB`
    : `${Math.round(characters / 1000)} kB`;

function commentCell(row: HistoryRow): Html {
  const text = commentsOf(row).join(' · ');
  if (text === '') return html`<span class="muted">—</span>`;
  const shown = cut(text, COMMENT_LENGTH);
  return html`${shown}${when(
    shown !== text,
    () =>
      html` <a href="/app/holds/${row.id}"
        >full text<span class="visually-hidden"> of the comments</span></a
      >`,
  )}`;
}

function row(line: HistoryRow): Html {
  const deciders = decidedBy(line);
  // Each value in one element: on a phone a cell is a grid of its label and its value.
  return html`<tr>
    <td data-label="Requested">${time(line.createdAt)}</td>
    <td data-label="Tool" class="tool">
      <div>
        <a href="/app/holds/${line.id}">${showHidden(line.toolName)}</a>
        <span class="muted">${showHidden(line.connection)}</span>
      </div>
    </td>
    <td data-label="Agent" title="${showHidden(line.agentId)}">
      ${showHidden(line.agentLabel ?? line.agentId)}
    </td>
    <td data-label="Arguments" class="summary">
      <div>
        ${line.argumentsSummary === '' ? html`<span class="muted">none</span>` : line.argumentsSummary}${when(
          line.argumentsSize >= 10_000,
          () => html` <span class="muted">(${size(line.argumentsSize)})</span>`,
        )}
      </div>
    </td>
    <td data-label="Status"><div>${statusBadge(line.status)}</div></td>
    <td data-label="Decided by" class="decided-by">
      <div>
        ${
          deciders.length === 0
            ? html`<span class="muted">—</span>`
            : html`<ul>
                ${deciders.map((who) => html`<li>${who}</li>`)}
              </ul>`
        }
        ${when(line.decidedAt !== null, () => html`<span class="muted">${time(line.decidedAt)}</span>`)}
      </div>
    </td>
    <td data-label="Comment" class="comment"><div>${commentCell(line)}</div></td>
  </tr>`;
}

function table(rows: HistoryRow[]): Html {
  return html`<div class="history-scroll">
    <table class="responsive history">
      <thead>
        <tr>
          <th scope="col">Requested</th>
          <th scope="col">Tool</th>
          <th scope="col">Agent</th>
          <th scope="col">Arguments</th>
          <th scope="col">Status</th>
          <th scope="col">Decided by</th>
          <th scope="col">Comment</th>
        </tr>
      </thead>
      <tbody>
        ${rows.map(row)}
      </tbody>
    </table>
  </div>`;
}

/** `1–50 of 1,234 holds`, each outcome's count, the CSV, and a word on holds that arrived since. */
function totals(values: HistoryValues, found: HistoryPage): Html {
  const first = (found.page - 1) * HISTORY_PAGE_SIZE + 1;
  const range = found.rows.length === 0 ? '' : `${count(first)}–${count(first + found.rows.length - 1)} of `;
  return html`<div class="history-totals">
    <p>
      <span><strong>${range}${count(found.total)}</strong> hold${found.total === 1 ? '' : 's'}</span>
      <a class="button secondary" href="${historyHref(values, { upto: found.upto, csv: true })}"
        >Download CSV</a
      >
    </p>
    <ul aria-label="Holds by outcome">
      ${OUTCOMES.map((outcome) => html`<li>${outcome} <strong>${count(found.outcomes[outcome])}</strong></li>`)}
    </ul>
    ${when(
      found.newer > 0,
      () =>
        html`<p class="notice">
          ${count(found.newer)} newer hold${found.newer === 1 ? '' : 's'} since this list was drawn.
          <a href="${historyHref(values)}">Show the newest</a>
        </p>`,
    )}
  </div>`;
}

/** First, previous, the numbers around this page (and the first and last), next, last. */
function pageJumps(values: HistoryValues, found: HistoryPage): Html {
  const { page, pages, upto } = found;
  const href = (n: number) => historyHref(values, { page: n, upto });
  const numbers = [...new Set([1, page - 2, page - 1, page, page + 1, page + 2, pages])]
    .filter((n) => n >= 1 && n <= pages)
    .sort((a, b) => a - b);
  const jump = (n: number, text: string, rel: string | null = null) =>
    n >= 1 && n <= pages && n !== page
      ? html`<a href="${href(n)}" ${rel ? html`rel="${rel}"` : null}>${text}</a>`
      : html`<span class="muted">${text}</span>`;
  return html`<nav class="page-jumps" aria-label="History pages">
    ${jump(1, '« First')} ${jump(page - 1, '‹ Previous', 'prev')}
    ${numbers.map(
      (n, i) =>
        html`${when(i > 0 && n - numbers[i - 1]! > 1, () => html`<span class="muted">…</span>`)}${
          n === page
            ? html`<span aria-current="page">${count(n)}</span>`
            : html`<a href="${href(n)}" aria-label="Page ${n}">${count(n)}</a>`
        }`,
    )}
    ${jump(page + 1, 'Next ›', 'next')} ${jump(pages, 'Last »')}
  </nav>`;
}

/** The holds of one page with the totals and the page jumps, or why there are none. */
export function historyResultsView(values: HistoryValues, found: HistoryPage): Html {
  if (found.total === 0)
    return html`<p class="empty card">
      ${isFiltered(values) ? 'No holds match these filters.' : 'No holds yet.'}
    </p>`;
  const jumps = when(found.pages > 1, () => pageJumps(values, found));
  if (found.rows.length === 0)
    return html`${totals(values, found)}
      <p class="empty card">No holds on this page: there are ${count(found.pages)} pages.</p>
      ${jumps}`;
  return html`${totals(values, found)} ${table(found.rows)} ${jumps}`;
}
