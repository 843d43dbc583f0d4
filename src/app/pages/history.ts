/**
 * History: every hold of the workspace, newest first, filtered (status, tool glob, agent id or label,
 * dates) and paged both ways by keyset cursors in the URL. Each row summarizes the hold's arguments
 * from the summary stored beside them; the arguments themselves are never read here.
 */
import type { FastifyInstance } from 'fastify';
import { HOLD_REFERENCE_PREFIX } from '../../domain/ids.ts';
import { historyOf, waitingIdsOf } from '../../services/inbox.ts';
import type { HoldFilters, HoldLine } from '../../store/holds.ts';
import { type Html, html, time, when } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';

const STATUSES = ['pending', 'approved', 'rejected', 'expired', 'auto_allowed', 'executed', 'failed'];
const HISTORY_PAGE_SIZE = 50;
/** The longest tool glob or agent a filter takes: ids, labels and tool names are at most 200 characters. */
const FILTER_LENGTH = 200;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const CURSOR = new RegExp(`^(\\d{1,16})_(${HOLD_REFERENCE_PREFIX}[A-Za-z0-9_-]{1,64})$`);

type Cursor = Pick<HoldLine, 'createdAt' | 'id'>;
type Field = 'status' | 'tool' | 'agent' | 'from' | 'to';
const FIELDS: Field[] = ['status', 'tool', 'agent', 'from', 'to'];

/** What the URL asks for: the filters as given (those understood), the page, and what was not understood. */
interface HistoryUrl {
  /** The values the form shows again and the page links keep: only the ones understood. */
  values: Partial<Record<Field, string>>;
  filters: HoldFilters;
  before: Cursor | null;
  after: Cursor | null;
  /** Why the URL is refused, each naming a field and never quoting its value. */
  problems: string[];
}

const epochOfDay = (value: string) => {
  const ms = Date.parse(`${value}T00:00:00Z`);
  // `2024-02-31` parses to March: only a day that reads back the same is one.
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value ? undefined : ms;
};

function cursorOf(value: string): Cursor | undefined {
  const match = CURSOR.exec(value);
  const createdAt = Number(match?.[1]);
  return match && Number.isSafeInteger(createdAt) ? { createdAt, id: match[2]! } : undefined;
}

const cursorText = (cursor: Cursor) => `${cursor.createdAt}_${cursor.id}`;

function parseHistoryUrl(query: Record<string, unknown>): HistoryUrl {
  const url: HistoryUrl = { values: {}, filters: {}, before: null, after: null, problems: [] };
  // A repeated parameter arrives as a list: one value per name is all the page takes.
  const single = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value.trim();
    url.problems.push(
      `${name === 'before' || name === 'after' ? 'Page' : label(name)}: given more than once.`,
    );
    return undefined;
  };
  const status = single('status');
  if (status && !STATUSES.includes(status)) url.problems.push('Status: not one of the statuses listed.');
  else if (status) url.values.status = url.filters.status = status;
  for (const name of ['tool', 'agent'] as const) {
    const value = single(name);
    if (!value) continue;
    if (value.length > FILTER_LENGTH)
      url.problems.push(`${label(name)}: at most ${FILTER_LENGTH} characters.`);
    // No name can hold a NUL: PostgreSQL stores none, nor takes one to compare.
    else if (value.includes('\u0000')) url.problems.push(`${label(name)}: contains a NUL character.`);
    else url.values[name] = url.filters[name] = value;
  }
  for (const name of ['from', 'to'] as const) {
    const value = single(name);
    if (!value) continue;
    const ms = DAY.test(value) ? epochOfDay(value) : undefined;
    if (ms === undefined) url.problems.push(`${label(name)}: not a day (YYYY-MM-DD).`);
    else {
      url.values[name] = value;
      // `to` is the last day shown, whole.
      url.filters[name] = name === 'to' ? ms + 86_400_000 : ms;
    }
  }
  for (const name of ['before', 'after'] as const) {
    const value = single(name);
    if (!value) continue;
    const cursor = cursorOf(value);
    if (cursor) url[name] = cursor;
    else url.problems.push('Page: the link to this page is not valid. Start again from the newest holds.');
  }
  if (url.before && url.after) url.problems.push('Page: a page is either newer or older, not both.');
  url.problems = [...new Set(url.problems)];
  return url;
}

const LABELS: Record<string, string> = {
  status: 'Status',
  tool: 'Tool',
  agent: 'Agent',
  from: 'From',
  to: 'To',
};
const label = (name: string) => LABELS[name] ?? 'A field';

/** `/app/history` with the understood filters and, when given, a page cursor. */
function historyHref(url: HistoryUrl, page: { before?: Cursor; after?: Cursor } = {}): string {
  const query = new URLSearchParams();
  for (const name of FIELDS) if (url.values[name]) query.set(name, url.values[name]);
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

function filterForm(url: HistoryUrl): Html {
  const { values } = url;
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

export function historyPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get<{ Querystring: Record<string, unknown> }>('/app/history', async (request, reply) => {
    const session = request.appSession!;
    const url = parseHistoryUrl(request.query ?? {});
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    const page = (content: Html, status = 200) =>
      sendPage(
        reply,
        layout(
          { title: 'History', session, active: 'history', pending },
          html`<h1>History</h1>
            ${filterForm(url)} ${content}`,
        ),
        status,
      );

    if (url.problems.length > 0) {
      // No hold is listed for a URL not understood; the form keeps only the values that were.
      const way = FIELDS.some((name) => url.values[name])
        ? 'Show the newest holds with the filters understood'
        : 'Show the newest holds';
      return page(
        html`<div class="error" role="alert">
          <p>This history page cannot be shown:</p>
          <ul>
            ${url.problems.map((problem) => html`<li>${problem}</li>`)}
          </ul>
          <p><a href="${historyHref(url)}">${way}</a></p>
        </div>`,
        400,
      );
    }

    const { lines, newer, older } = await historyOf(
      ctx,
      session.workspace.id,
      url.filters,
      { before: url.before, after: url.after },
      HISTORY_PAGE_SIZE,
    );
    const pager = when(
      newer || older,
      () =>
        html`<nav class="pager" aria-label="History pages">
          ${newer ? html`<a href="${historyHref(url, { after: newer })}" rel="prev">← Newer</a>` : html`<span></span>`}
          ${when(older, () => html`<a href="${historyHref(url, { before: older! })}" rel="next">Older →</a>`)}
        </nav>`,
    );
    return page(
      lines.length === 0
        ? html`<p class="empty card">
              ${url.before ? 'No older holds match.' : FIELDS.some((n) => url.values[n]) ? 'No holds match these filters.' : 'No holds yet.'}
            </p>
            ${pager}`
        : html`${table(lines)} ${pager}`,
    );
  });
}
