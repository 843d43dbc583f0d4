/**
 * The History page (`/app/history`): its filter form, one row per hold, and the pages both ways. What
 * the URL asks for is read in `pages/history.ts`.
 */
import type { HoldLine } from '../../store/hold-lines.ts';
import { type Html, html, time, when } from '../html.ts';

export const STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];
/** The longest tool glob or agent a filter takes: ids, labels and tool names are at most 200 characters. */
export const FILTER_LENGTH = 200;

export type Cursor = Pick<HoldLine, 'createdAt' | 'id'>;
type Field = 'status' | 'tool' | 'agent' | 'from' | 'to';
export const FIELDS: Field[] = ['status', 'tool', 'agent', 'from', 'to'];
/** The filters as the form shows them again and the page links keep them: only the ones understood. */
export type HistoryValues = Partial<Record<Field, string>>;

const cursorText = (cursor: Cursor) => `${cursor.createdAt}_${cursor.id}`;

/** `/app/history` with the understood filters and, when given, a page cursor. */
export function historyHref(values: HistoryValues, page: { before?: Cursor; after?: Cursor } = {}): string {
  const query = new URLSearchParams();
  for (const name of FIELDS) if (values[name]) query.set(name, values[name]);
  if (page.before) query.set('before', cursorText(page.before));
  if (page.after) query.set('after', cursorText(page.after));
  const text = query.toString();
  return text ? `/app/history?${text}` : '/app/history';
}

const statusBadge = (status: string) =>
  html`<span class="status ${status}">${status.replace('_', ' ')}</span>`;

/** `1.2 MB`: the size of large arguments, so a short summary of a huge payload does not mislead. */
const size = (characters: number) =>
  characters >= 1_000_000
    ? `${(characters / 1_000_000).toFixed(1)} MB`
    : `${Math.round(characters / 1000)} kB`;

function filterForm(values: HistoryValues): Html {
  const text = (name: 'tool' | 'agent', title: string, hint: string, example: string) =>
    html`<div>
      <label for="f-${name}">${title} <span class="muted">${hint}</span></label
      ><input
        id="f-${name}"
        name="${name}"
        type="text"
        value="${values[name] ?? ''}"
        maxlength="${FILTER_LENGTH}"
        placeholder="${example}"
      />
    </div>`;
  const day = (name: 'from' | 'to', title: string) =>
    html`<div>
      <label for="f-${name}">${title}</label
      ><input id="f-${name}" name="${name}" type="date" value="${values[name] ?? ''}" />
    </div>`;
  const filtered = FIELDS.some((name) => values[name]);
  return html`<form
    method="get"
    action="/app/history"
    class="filters history-filters"
    role="search"
    aria-label="Filter the history"
  >
    <div>
      <label for="f-status">Status</label
      ><select id="f-status" name="status">
        <option value="">Any</option>
        ${STATUSES.map(
          (s) =>
            html`<option value="${s}" ${values.status === s ? html`selected` : null}>
              ${s.replace('_', ' ')}
            </option>`,
        )}
      </select>
    </div>
    ${text('tool', 'Tool', '(glob)', 'payments.*')} ${text('agent', 'Agent', '(id or label)', 'billing-bot')}
    ${day('from', 'From')} ${day('to', 'To')}
    <div class="filter-buttons">
      <button type="submit">Filter</button>${when(filtered, () => html` <a href="/app/history">Clear</a>`)}
    </div>
  </form>`;
}

function row(line: HoldLine): Html {
  // Each value in one element: on a phone a cell is a grid of its label and its value.
  return html`<tr>
    <td data-label="Requested">${time(line.createdAt)}</td>
    <td data-label="Tool" class="tool">
      <div>
        <a href="/app/holds/${line.id}">${line.toolName}</a> <span class="muted">${line.connection}</span>
      </div>
    </td>
    <td data-label="Agent" title="${line.agentId}">${line.agentLabel ?? line.agentId}</td>
    <td data-label="Arguments" class="summary">
      <div>
        ${line.argumentsSummary === '' ? html`<span class="muted">none</span>` : line.argumentsSummary}${when(
          line.argumentsSize >= 10_000,
          () => html` <span class="muted">(${size(line.argumentsSize)})</span>`,
        )}
      </div>
    </td>
    <td data-label="Status"><div>${statusBadge(line.status)}</div></td>
    <td data-label="Decided">${time(line.decidedAt)}</td>
  </tr>`;
}

function table(lines: HoldLine[]): Html {
  return html`<table class="responsive history">
    <thead>
      <tr>
        <th scope="col">Requested</th>
        <th scope="col">Tool</th>
        <th scope="col">Agent</th>
        <th scope="col">Arguments</th>
        <th scope="col">Status</th>
        <th scope="col">Decided</th>
      </tr>
    </thead>
    <tbody>
      ${lines.map(row)}
    </tbody>
  </table>`;
}

/** The page's body: the form, then `content` (the holds, or why none are listed). */
export const historyView = (values: HistoryValues, content: Html) =>
  html`<h1>History</h1>
    ${filterForm(values)} ${content}`;

/** Why a URL not understood lists no hold, and the way to the newest holds with the filters that were. */
export function notUnderstoodView(values: HistoryValues, problems: string[]): Html {
  const way = FIELDS.some((name) => values[name])
    ? 'Show the newest holds with the filters understood'
    : 'Show the newest holds';
  return html`<div class="error" role="alert">
    <p>This history page cannot be shown:</p>
    <ul>
      ${problems.map((problem) => html`<li>${problem}</li>`)}
    </ul>
    <p><a href="${historyHref(values)}">${way}</a></p>
  </div>`;
}

/** The holds of one page, or why there are none, with the links to the pages before and after. */
export function historyLinesView(
  values: HistoryValues,
  lines: HoldLine[],
  { newer, older, olderPage }: { newer: Cursor | null; older: Cursor | null; olderPage: boolean },
): Html {
  const pager = when(
    newer || older,
    () =>
      html`<nav class="pager" aria-label="History pages">
        ${newer ? html`<a href="${historyHref(values, { after: newer })}" rel="prev">← Newer</a>` : html`<span></span>`}
        ${when(older, () => html`<a href="${historyHref(values, { before: older! })}" rel="next">Older →</a>`)}
      </nav>`,
  );
  if (lines.length > 0) return html`${table(lines)} ${pager}`;
  return html`<p class="empty card">
      ${olderPage ? 'No older holds match.' : FIELDS.some((n) => values[n]) ? 'No holds match these filters.' : 'No holds yet.'}
    </p>
    ${pager}`;
}
