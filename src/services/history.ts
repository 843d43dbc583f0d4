/**
 * History: a workspace's holds, newest first, filtered, counted by outcome and paged by number; each
 * with who decided it and their comments. The same rows, every one that matches, make the CSV.
 */
import { type HoldDecisionRow, listDecisionsOfHolds } from '../store/hold-decisions.ts';
import { type HoldLine, listLinesById } from '../store/hold-lines.ts';
import {
  countHistory,
  countNewer,
  type HistoryCursor,
  type HistoryFilters,
  listHistory,
  type Outcome,
  OUTCOMES,
  type PlacedHold,
} from '../store/history.ts';
import type { ServiceContext } from './context.ts';

export { type HistoryCursor, type HistoryFilters, type Outcome, OUTCOMES } from '../store/history.ts';

export const HISTORY_PAGE_SIZE = 50;

export interface HistoryRow extends HoldLine {
  outcome: Outcome;
  /** Every member's decision on it, oldest first. */
  decisions: HoldDecisionRow[];
}

export interface HistoryPage {
  rows: HistoryRow[];
  /** 1-based; may be past the last page (then no rows). */
  page: number;
  pages: number;
  /** Holds that match, up to `upto`; and by outcome. */
  total: number;
  outcomes: Record<Outcome, number>;
  /** The newest hold the pages include, so that they stay put: null when none matches. */
  upto: HistoryCursor | null;
  /** Matching holds newer than `upto`: arrived since the first page was drawn. */
  newer: number;
}

const PAST: Record<string, string> = { approve: 'approved', reject: 'rejected' };

/** What decided a hold when no member did (or after those who did, for an expiry). */
const NOT_BY_A_MEMBER: Partial<Record<Outcome, string>> = {
  expired: 'expired',
  withdrawn: 'withdrawn by the agent',
  allowed: 'allowed by rule',
  denied: 'denied by rule',
};

const nameOf = (d: HoldDecisionRow) => (d.onBehalfOfName ? `${d.name} for ${d.onBehalfOfName}` : d.name);

/** `Ada Lovelace (approved)`, `Dan Ortiz for Ann Keller (rejected)`, then `expired` or `allowed by rule`. */
export function decidedBy(row: Pick<HistoryRow, 'outcome' | 'decisions'>): string[] {
  const members = row.decisions.map((d) => `${nameOf(d)} (${PAST[d.verdict] ?? d.verdict})`);
  const other = NOT_BY_A_MEMBER[row.outcome];
  return other ? [...members, other] : members;
}

/** `Ada Lovelace: looks right`: each comment with its author. */
export const commentsOf = (row: Pick<HistoryRow, 'decisions'>): string[] =>
  row.decisions.filter((d) => d.comment).map((d) => `${nameOf(d)}: ${d.comment}`);

/** Lines, decisions and outcomes of these placed holds, in their order. */
async function rowsOf(ctx: ServiceContext, workspaceId: string, placed: PlacedHold[]): Promise<HistoryRow[]> {
  const ids = placed.map((hold) => hold.id);
  const [lines, decisions] = await Promise.all([
    listLinesById(ctx.db, workspaceId, ids),
    listDecisionsOfHolds(ctx.db, ids),
  ]);
  const byId = new Map(lines.map((line) => [line.id, line]));
  const decisionsOf = Map.groupBy(decisions, (d) => d.holdId);
  return placed.flatMap(({ id, outcome }) => {
    const line = byId.get(id);
    return line ? [{ ...line, outcome, decisions: decisionsOf.get(id) ?? [] }] : [];
  });
}

/**
 * One numbered page. Without `upto` the listing starts now: its newest matching hold becomes `upto`,
 * which the page links carry, so holds arriving later shift no page (they are counted in `newer`).
 */
export async function historyPage(
  ctx: ServiceContext,
  workspaceId: string,
  filters: Omit<HistoryFilters, 'upto'>,
  { page, upto: given }: { page: number; upto: HistoryCursor | null },
): Promise<HistoryPage> {
  const newest = given ? null : (await listHistory(ctx.db, workspaceId, filters, { offset: 0 }, 1))[0];
  const upto = given ?? (newest ? { createdAt: newest.createdAt, id: newest.id } : null);
  const outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  if (!upto) return { rows: [], page, pages: 0, total: 0, outcomes, upto, newer: 0 };
  const bounded = { ...filters, upto };
  const [counts, placed, newer] = await Promise.all([
    countHistory(ctx.db, workspaceId, bounded),
    listHistory(ctx.db, workspaceId, bounded, { offset: (page - 1) * HISTORY_PAGE_SIZE }, HISTORY_PAGE_SIZE),
    given ? countNewer(ctx.db, workspaceId, filters, given) : 0,
  ]);
  for (const [outcome, holds] of counts) outcomes[outcome] = holds;
  const total = [...counts.values()].reduce((sum, holds) => sum + holds, 0);
  return {
    rows: await rowsOf(ctx, workspaceId, placed),
    page,
    pages: Math.ceil(total / HISTORY_PAGE_SIZE),
    total,
    outcomes,
    upto,
    newer,
  };
}

const BATCH = 1000;

/** Every matching hold, newest first, a batch at a time: the CSV streams them, so memory stays flat. */
export async function* historyBatches(
  ctx: ServiceContext,
  workspaceId: string,
  filters: HistoryFilters,
): AsyncGenerator<HistoryRow[]> {
  let after: HistoryCursor | null = null;
  for (;;) {
    const placed = await listHistory(ctx.db, workspaceId, filters, { after }, BATCH);
    if (placed.length > 0) yield await rowsOf(ctx, workspaceId, placed);
    // SQLite answers synchronously: a turn of the event loop per batch lets other requests in.
    await new Promise((resolve) => setImmediate(resolve));
    if (placed.length < BATCH) return;
    after = placed.at(-1)!;
  }
}
