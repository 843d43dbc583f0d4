/**
 * History: every hold of the workspace, newest first, filtered (status, tool glob, agent id or label,
 * dates) and paged both ways by keyset cursors in the URL. Each row summarizes the hold's arguments
 * from the summary stored beside them; the arguments themselves are never read here.
 */
import type { FastifyInstance } from 'fastify';
import { HOLD_REFERENCE_PREFIX } from '../../domain/ids.ts';
import { historyOf, waitingIdsOf } from '../../services/inbox.ts';
import type { HoldFilters } from '../../store/hold-lines.ts';
import type { Html } from '../html.ts';
import { layout } from '../layout.ts';
import { type PageDeps, sendPage } from '../respond.ts';
import {
  type Cursor,
  FILTER_LENGTH,
  historyLinesView,
  type HistoryValues,
  historyView,
  notUnderstoodView,
  STATUSES,
} from '../views/history.ts';

const HISTORY_PAGE_SIZE = 50;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const CURSOR = new RegExp(`^(\\d{1,16})_(${HOLD_REFERENCE_PREFIX}[A-Za-z0-9_-]{1,64})$`);

/** What the URL asks for: the filters as given (those understood), the page, and what was not understood. */
interface HistoryUrl {
  values: HistoryValues;
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

export function historyPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get<{ Querystring: Record<string, unknown> }>('/app/history', async (request, reply) => {
    const session = request.appSession!;
    const url = parseHistoryUrl(request.query ?? {});
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    const page = (content: Html, status = 200) =>
      sendPage(
        reply,
        layout({ title: 'History', session, active: 'history', pending }, historyView(url.values, content)),
        status,
      );
    // No hold is listed for a URL not understood; the form keeps only the values that were.
    if (url.problems.length > 0) return page(notUnderstoodView(url.values, url.problems), 400);
    const { lines, newer, older } = await historyOf(
      ctx,
      session.workspace.id,
      url.filters,
      { before: url.before, after: url.after },
      HISTORY_PAGE_SIZE,
    );
    return page(historyLinesView(url.values, lines, { newer, older, olderPage: !!url.before }));
  });
}
