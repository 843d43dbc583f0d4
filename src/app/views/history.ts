/**
 * The History page (`/app/history`): its filter form, then the holds (views/history-table.ts). What the
 * URL asks for is read in `pages/history.ts`.
 */
import type { HistoryCursor } from '../../services/history.ts';
import { type Html, html, when } from '../html.ts';

export const STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];
/** The longest filter value: ids, labels, names and tool names are at most 200 characters. */
export const FILTER_LENGTH = 200;

/** The substring filters, as the URL names them. */
export const TEXT_FIELDS = ['tool', 'agent', 'decided_by', 'text'] as const;
type Field = 'status' | (typeof TEXT_FIELDS)[number] | 'from' | 'to';
const FIELDS: Field[] = ['status', ...TEXT_FIELDS, 'from', 'to'];
/** The filters as the form shows them again and the links keep them: only the ones understood. */
export type HistoryValues = Partial<Record<Field, string>>;

export const LABELS: Record<Field, string> = {
  status: 'Status',
  tool: 'Tool',
  agent: 'Agent',
  decided_by: 'Decided by',
  text: 'Text',
  from: 'From',
  to: 'To',
};

export const isFiltered = (values: HistoryValues) => FIELDS.some((name) => values[name]);

/**
 * `/app/history` (or its CSV) with the understood filters and, when given, a page and the newest hold
 * the listing includes.
 */
export function historyHref(
  values: HistoryValues,
  { page, upto, csv = false }: { page?: number; upto?: HistoryCursor | null; csv?: boolean } = {},
): string {
  const query = new URLSearchParams();
  for (const name of FIELDS) if (values[name]) query.set(name, values[name]);
  if (upto) query.set('upto', `${upto.createdAt}_${upto.id}`);
  if (page && page > 1) query.set('page', String(page));
  const text = query.toString();
  const path = csv ? '/app/history.csv' : '/app/history';
  return text ? `${path}?${text}` : path;
}

const HINTS: Record<(typeof TEXT_FIELDS)[number], [hint: string, example: string]> = {
  tool: ['(contains)', 'payments'],
  agent: ['(id or label)', 'billing'],
  decided_by: ['(name or e-mail)', 'ada'],
  text: ['(arguments, comments)', 'INV-42'],
};

function filterForm(values: HistoryValues): Html {
  const text = (name: (typeof TEXT_FIELDS)[number]) =>
    html`<div>
      <label for="f-${name}">${LABELS[name]} <span class="muted">${HINTS[name][0]}</span></label
      ><input
        id="f-${name}"
        name="${name}"
        type="text"
        value="${values[name] ?? ''}"
        maxlength="${FILTER_LENGTH}"
        placeholder="${HINTS[name][1]}"
      />
    </div>`;
  const day = (name: 'from' | 'to') =>
    html`<div>
      <label for="f-${name}">${LABELS[name]}</label
      ><input id="f-${name}" name="${name}" type="date" value="${values[name] ?? ''}" />
    </div>`;
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
    ${TEXT_FIELDS.map(text)} ${day('from')} ${day('to')}
    <div class="filter-buttons">
      <button type="submit">Filter</button>${when(
        isFiltered(values),
        () => html` <a href="/app/history">Clear</a>`,
      )}
    </div>
  </form>`;
}

/** The page's body: the form, then `content` (the holds, or why none are listed). */
export const historyView = (values: HistoryValues, content: Html) =>
  html`<h1>History</h1>
    ${filterForm(values)} ${content}`;

/** Why a URL not understood lists no hold, and the way to the newest holds with the filters that were. */
export function notUnderstoodView(values: HistoryValues, problems: string[]): Html {
  const way = isFiltered(values)
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
