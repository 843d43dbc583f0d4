/** The inbox's URL: filters, order, a page number and the selected hold, read and written. */
import { z } from 'zod';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import type { InboxFilters } from '../../services/inbox.ts';

const text = (max: number) => z.string().trim().max(max).optional();

const InboxUrl = z.object({
  tool: text(200),
  connection: text(200),
  agent: text(200),
  rule: text(200),
  env: z.enum(['', 'live', 'test']).optional(),
  q: text(200),
  order: z.enum(['deadline', 'newest']).optional(),
  page: z
    .string()
    .regex(/^[1-9]\d{0,5}$/)
    .optional(),
  hold: z.string().regex(HOLD_REFERENCE_PATTERN).optional(),
});
export type InboxUrl = z.infer<typeof InboxUrl>;

const FIELD_NAMES: Record<string, string> = {
  tool: 'Tool',
  connection: 'Connection',
  agent: 'Agent',
  rule: 'Rule',
  env: 'Environment',
  q: 'Search',
  order: 'Order',
  page: 'Page',
  hold: 'Hold',
};

/** The parsed URL, or which of its fields is not understood (named, never echoed). */
export function parseInboxUrl(query: unknown): { url: InboxUrl } | { problem: string } {
  const parsed = InboxUrl.safeParse(query ?? {});
  if (parsed.success) return { url: parsed.data };
  const names = [
    ...new Set(parsed.error.issues.map((issue) => FIELD_NAMES[String(issue.path[0])] ?? 'A field')),
  ];
  return { problem: `${names.join(', ')}: not understood. Change the filter or start again from the inbox.` };
}

export function filtersOf(url: InboxUrl): InboxFilters {
  return {
    tool: url.tool || undefined,
    connection: url.connection || undefined,
    agent: url.agent || undefined,
    rule: url.rule || undefined,
    environment: url.env || undefined,
    text: url.q || undefined,
  };
}

/** The URL's filters as [name, value] pairs, those set only (a bulk decision's form carries them). */
export const filterFields = (url: InboxUrl): [string, string][] =>
  (['tool', 'connection', 'agent', 'rule', 'env', 'q'] as const).flatMap((key) =>
    url[key] ? [[key, url[key]] as [string, string]] : [],
  );

const KEPT = ['tool', 'connection', 'agent', 'rule', 'env', 'q', 'order', 'page', 'hold'] as const;

/** `/app/inbox?…` with the URL's filters and order, changed by `set` (an undefined value drops a key). */
export function inboxHref(
  url: InboxUrl,
  set: Partial<Record<keyof InboxUrl, string | undefined>> = {},
): string {
  const kept: [string, string][] = [];
  for (const key of KEPT) {
    const value = key in set ? set[key] : url[key];
    if (value) kept.push([key, value]);
  }
  const query = new URLSearchParams(kept).toString();
  return query ? `/app/inbox?${query}` : '/app/inbox';
}

/** `path` with these query parameters set (null ones dropped), keeping the ones it has. */
export function withQuery(path: string, set: Record<string, string | null>): string {
  const url = new URL(path, 'http://app.invalid');
  for (const [key, value] of Object.entries(set)) {
    if (value === null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  return `${url.pathname}${url.search}`;
}
