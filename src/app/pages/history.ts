/**
 * History: every hold of the workspace, newest first, filtered (status, substrings of the tool, the
 * agent, a decider, the arguments or comments; dates), counted by outcome, paged by number, and as a CSV
 * of every matching hold. What the URL asks for is read here; the page is drawn in views/history.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { HOLD_REFERENCE_PREFIX } from '../../domain/ids.ts';
import { type HistoryCursor, type HistoryFilters, historyPage } from '../../services/history.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import { sendHistoryCsv } from '../../web/history-download.ts';
import type { Html } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';
import { historyResultsView } from '../views/history-table.ts';
import {
  FILTER_LENGTH,
  type HistoryValues,
  historyView,
  LABELS,
  notUnderstoodView,
  STATUSES,
  TEXT_FIELDS,
} from '../views/history.ts';

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const CURSOR = new RegExp(`^(\\d{1,16})_(${HOLD_REFERENCE_PREFIX}[A-Za-z0-9_-]{1,64})$`);
/** Page numbers go this far: 50 million holds. */
const PAGE = /^[1-9]\d{0,5}$/;

/** What the URL asks for: the filters as given (those understood), the page, and what was not understood. */
interface HistoryUrl {
  values: HistoryValues;
  filters: Omit<HistoryFilters, 'upto'>;
  page: number;
  upto: HistoryCursor | null;
  /** Why the URL is refused, each naming a field and never quoting its value. */
  problems: string[];
}

const epochOfDay = (value: string) => {
  const ms = Date.parse(`${value}T00:00:00Z`);
  // `2024-02-31` parses to March: only a day that reads back the same is one.
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value ? undefined : ms;
};

function cursorOf(value: string): HistoryCursor | undefined {
  const match = CURSOR.exec(value);
  const createdAt = Number(match?.[1]);
  return match && Number.isSafeInteger(createdAt) ? { createdAt, id: match[2]! } : undefined;
}

const FILTER_OF = { tool: 'tool', agent: 'agent', decided_by: 'decidedBy', text: 'text' } as const;

function parseHistoryUrl(query: Record<string, unknown>): HistoryUrl {
  const url: HistoryUrl = { values: {}, filters: {}, page: 1, upto: null, problems: [] };
  const label = (name: string) => LABELS[name as keyof typeof LABELS] ?? 'Page';
  // A repeated parameter arrives as a list: one value per name is all the page takes.
  const single = (name: string): string | undefined => {
    const value = query[name];
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value.trim();
    url.problems.push(`${label(name)}: given more than once.`);
    return undefined;
  };
  const status = single('status');
  if (status && !STATUSES.includes(status)) url.problems.push('Status: not one of the statuses listed.');
  else if (status) url.values.status = url.filters.status = status;
  for (const name of TEXT_FIELDS) {
    const value = single(name);
    if (!value) continue;
    if (value.length > FILTER_LENGTH)
      url.problems.push(`${label(name)}: at most ${FILTER_LENGTH} characters.`);
    // PostgreSQL stores no NUL, nor takes one to compare.
    else if (value.includes('\u0000')) url.problems.push(`${label(name)}: contains a NUL character.`);
    else url.values[name] = url.filters[FILTER_OF[name]] = value;
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
  const page = single('page');
  if (page && !PAGE.test(page)) url.problems.push('Page: not a page number.');
  else if (page) url.page = Number(page);
  const upto = single('upto');
  const cursor = upto ? cursorOf(upto) : undefined;
  if (upto && !cursor)
    url.problems.push('Page: the link to this page is not valid. Start again from the newest holds.');
  else if (cursor) url.upto = cursor;
  url.problems = [...new Set(url.problems)];
  return url;
}

export function historyPages(app: FastifyInstance, { ctx }: PageDeps) {
  /** The page with `content` under the form, which keeps only the values understood. */
  const send = async (
    request: FastifyRequest,
    reply: FastifyReply,
    url: HistoryUrl,
    content: Html,
    status = 200,
  ) => {
    const session = request.appSession!;
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    const body = historyView(url.values, content);
    return sendPage(reply, layout({ title: 'History', session, active: 'history', pending }, body), status);
  };

  app.get<{ Querystring: Record<string, unknown> }>('/app/history', async (request, reply) => {
    const url = parseHistoryUrl(request.query ?? {});
    // No hold is listed for a URL not understood.
    if (url.problems.length > 0)
      return send(request, reply, url, notUnderstoodView(url.values, url.problems), 400);
    const found = await historyPage(ctx, request.appSession!.workspace.id, url.filters, url);
    return send(request, reply, url, historyResultsView(url.values, found));
  });

  // The CSV of the same filters: every matching hold up to `upto` when the link carries it.
  app.get<{ Querystring: Record<string, unknown> }>('/app/history.csv', async (request, reply) => {
    const url = parseHistoryUrl(request.query ?? {});
    if (url.problems.length > 0)
      return send(request, reply, url, notUnderstoodView(url.values, url.problems), 400);
    const filters = { ...url.filters, upto: url.upto ?? undefined };
    return sendHistoryCsv(ctx, reply, request.appSession!.workspace, filters);
  });
}
