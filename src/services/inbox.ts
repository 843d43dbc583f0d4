/** What the app shows a member: the holds waiting for them, the history, one hold in full. */
import type { Capacity } from '../domain/four-eyes.ts';
import { type Hold, type HoldStatus, isWithdrawn } from '../domain/hold.ts';
import { CLASSIFICATION_RULE } from '../domain/policy.ts';
import { compileGlob } from '../domain/rules.ts';
import { type ActionSummary, nameText, summarizeAction } from '../domain/summary.ts';
import {
  type HoldDecisionRow,
  listDecisionsOfHolds,
  listHoldDecisions,
  pendingDecisions,
} from '../store/hold-decisions.ts';
import {
  escalationsTo,
  type HoldFilters,
  type HoldLine,
  listArgumentsById,
  listHolds,
  listLinesById,
  listPendingApprovers,
  listPendingLines,
} from '../store/hold-lines.ts';
import { listAskingEventsSince } from '../store/follow-ups.ts';
import type { Member } from '../store/members.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';
import { type InboxFilters, lineMatcher, searchMatches } from './inbox-filters.ts';
import { getHold } from './read-hold.ts';

export type { InboxFilters } from './inbox-filters.ts';

/**
 * The most pending holds a member's lists consider, soonest deadline first. Far more than a person works
 * through; past it the inbox says how many it left out rather than slowing every page down.
 */
export const WAITING_CAP = 10_000;
export const INBOX_PAGE_SIZE = 50;

export type InboxOrder = 'deadline' | 'newest';

export interface InboxQuery {
  filters: InboxFilters;
  order: InboxOrder;
  /** Which page, from 1 (past the last: the last). */
  page?: number;
  limit?: number;
}

/** Why a hold is the reader's to decide, the most particular reason first. */
export type WhyYou =
  | { kind: 'delegated'; name: string }
  | { kind: 'escalated'; at: number }
  | { kind: 'four_eyes' }
  | { kind: 'new_tool' }
  | { kind: 'approver'; rule: string | null };

export interface WaitingLine extends HoldLine {
  /** Who decided so far, oldest first (four-eyes holds). */
  decisions: (HoldDecisionRow & { holdId: string })[];
  why: WhyYou;
}

export interface InboxPage {
  lines: WaitingLine[];
  /** Holds waiting for the member that match the filters. */
  matching: number;
  /** Holds waiting for the member, filters aside (the header's count). */
  waiting: number;
  /** Whether more than WAITING_CAP pending holds exist, the rest not considered. */
  capped: boolean;
  /** The page shown, from 1, of `pages` (at least 1); `start`: how many matching holds come before it. */
  page: number;
  pages: number;
  start: number;
  /** The values the filters can take among the waiting holds. */
  choices: { connections: string[]; rules: string[]; environments: string[] };
}

/** Ascending by the order's key (the deadline, or newest first), ties broken by id. */
function compareIn(order: InboxOrder) {
  const key = (line: HoldLine) =>
    order === 'newest' ? -line.createdAt : (line.expiresAt ?? Number.MAX_SAFE_INTEGER);
  return (a: HoldLine, b: HoldLine) => key(a) - key(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

const distinct = (values: (string | null)[]) =>
  [...new Set(values.filter((value): value is string => value !== null))].sort();

function whyYou(line: HoldLine, capacity: Capacity, escalatedAt: number | undefined): WhyYou {
  if (capacity.blocker === null && capacity.onBehalfOf)
    return { kind: 'delegated', name: capacity.onBehalfOf.name };
  if (escalatedAt !== undefined) return { kind: 'escalated', at: escalatedAt };
  if (line.approvalsRequired > 1 && line.approvalsReceived > 0) return { kind: 'four_eyes' };
  if (line.ruleName === CLASSIFICATION_RULE.new.name) return { kind: 'new_tool' };
  return { kind: 'approver', rule: line.ruleName };
}

/**
 * One page of the holds waiting for this member: pending, not expired, theirs to decide, not decided
 * by them; filtered, in the order asked; each line with why it is theirs. Arguments are never read,
 * only their summaries (a search looks into them in the database).
 */
export async function inboxPage(ctx: ServiceContext, member: Member, query: InboxQuery): Promise<InboxPage> {
  const limit = query.limit ?? INBOX_PAGE_SIZE;
  const [pending, capacityOf] = await Promise.all([
    listPendingLines(ctx.db, member.workspaceId, WAITING_CAP + 1),
    capacities(ctx, member),
  ]);
  const capped = pending.length > WAITING_CAP;
  const waiting = pending.slice(0, WAITING_CAP).filter((line) => capacityOf(line).blocker === null);
  const found = await searchMatches(ctx.db, member.workspaceId, query.filters, waiting);
  const matching = waiting.filter(lineMatcher(query.filters, found)).sort(compareIn(query.order));
  const pages = Math.max(1, Math.ceil(matching.length / limit));
  const page = Math.min(Math.max(1, query.page ?? 1), pages);
  const start = (page - 1) * limit;
  const shown = matching.slice(start, start + limit);
  const [decisions, escalations] = await Promise.all([
    listDecisionsOfHolds(
      ctx.db,
      shown.filter((line) => line.approvalsReceived > 0).map((line) => line.id),
    ),
    escalationsTo(
      ctx.db,
      member.workspaceId,
      member.email,
      shown.map((line) => line.id),
    ),
  ]);
  return {
    lines: shown.map((line) => ({
      ...line,
      decisions: decisions.filter((d) => d.holdId === line.id),
      why: whyYou(line, capacityOf(line), escalations.get(line.id)),
    })),
    matching: matching.length,
    waiting: waiting.length,
    capped,
    page,
    pages,
    start,
    choices: {
      connections: distinct(waiting.map((line) => line.connection)),
      rules: distinct(waiting.map((line) => line.ruleName)),
      environments: distinct(waiting.map((line) => line.environment)),
    },
  };
}

export interface InboxChanges {
  /** Holds waiting for the member, filters aside (the count every page shows). */
  waiting: number;
  /**
   * Holds matching the filters, not shown, that started waiting for the member after `since`: submitted
   * since, or since brought to them by an escalation step or a handover from a member away.
   */
  arrived: number;
  /** Shown holds that no longer wait for the member, and why. */
  left: {
    id: string;
    status: HoldStatus;
    withdrawn: boolean;
    decisions: { name: string; verdict: string; mine: boolean }[];
  }[];
  /** Shown holds that still wait, with the approvals they have so far (four-eyes). */
  approvals: { id: string; received: number; required: number; names: string[] }[];
  /** Whether an arrived hold is due before every shown one that still waits (before any, if none does). */
  dueSooner: boolean;
}

/**
 * What changed for a page of the inbox (or a hold's page) since it was drawn at `since`: how many
 * holds arrived, and which of the `shown` ones stopped waiting for the member, so the page can say
 * so in place without moving anything.
 */
export async function inboxChanges(
  ctx: ServiceContext,
  member: Member,
  shown: readonly string[],
  filters: InboxFilters,
  since: number,
): Promise<InboxChanges> {
  const [pending, capacityOf, asking] = await Promise.all([
    listPendingLines(ctx.db, member.workspaceId, WAITING_CAP),
    capacities(ctx, member),
    listAskingEventsSince(ctx.db, member.workspaceId, since),
  ]);
  const waiting = pending.filter((line) => capacityOf(line).blocker === null);
  const found = await searchMatches(ctx.db, member.workspaceId, filters, waiting);
  const waitingIds = new Set(waiting.map((line) => line.id));
  const askedSince = new Set(
    asking
      .filter(({ kind, detail }) =>
        kind === 'handover'
          ? detail.delegate === member.email
          : Array.isArray(detail.notified) && detail.notified.includes(member.email),
      )
      .map((event) => event.holdId),
  );
  const shownIds = new Set(shown);
  const matches = lineMatcher(filters, found);
  const gone = shown.filter((id) => !waitingIds.has(id));
  const stillShown = waiting.filter((line) => shownIds.has(line.id));
  const approved = stillShown.filter((line) => line.approvalsReceived > 0).map((line) => line.id);
  const [lines, decisions] = await Promise.all([
    listLinesById(ctx.db, member.workspaceId, gone),
    listDecisionsOfHolds(ctx.db, [...gone, ...approved]),
  ]);
  const arrived = waiting.filter(
    (line) => (line.createdAt > since || askedSince.has(line.id)) && !shownIds.has(line.id) && matches(line),
  );
  const deadlines = (lines: HoldLine[]) => lines.map((line) => line.expiresAt ?? Infinity);
  return {
    waiting: waiting.length,
    arrived: arrived.length,
    dueSooner: Math.min(...deadlines(arrived)) < Math.min(...deadlines(stillShown)),
    left: lines.map((line) => ({
      id: line.id,
      status: line.status,
      withdrawn: isWithdrawn(line),
      decisions: decisions
        .filter((d) => d.holdId === line.id)
        .map((d) => ({ name: d.name, verdict: d.verdict, mine: d.memberId === member.id })),
    })),
    approvals: stillShown.map((line) => ({
      id: line.id,
      received: line.approvalsReceived,
      required: line.approvalsRequired,
      names: decisions.filter((d) => d.holdId === line.id && d.verdict === 'approve').map((d) => d.name),
    })),
  };
}

/**
 * The holds waiting for this member, soonest deadline first, each with its action summarized in
 * `budget` characters (the widget's list), and its arguments where they were read (null otherwise).
 * Only arguments short enough to fit are read: longer ones cannot be complete, and their stored summary
 * says enough. A hold an approver changed (`changed`) is not complete either: the summary shows the call
 * as submitted, and only its page shows the change.
 */
export async function waitingSummariesOf(
  ctx: ServiceContext,
  member: Member,
  budget: number,
  limit: number,
): Promise<
  (HoldLine & { summary: ActionSummary; arguments: Record<string, unknown> | null; changed: boolean })[]
> {
  const { lines } = await inboxPage(ctx, member, { filters: {}, order: 'deadline', limit });
  const small = lines.filter((line) => line.argumentsSize <= budget * 2).map((line) => line.id);
  const args = await listArgumentsById(ctx.db, member.workspaceId, small);
  return lines.map((line) => {
    const read = args.get(line.id);
    const changed = read?.changedArguments != null;
    const summary = read
      ? summarizeAction(line.toolName, read.arguments, budget)
      : { text: `${nameText(line.toolName)}(${line.argumentsSummary})`, complete: false };
    return {
      ...line,
      arguments: read?.arguments ?? null,
      changed,
      summary: { ...summary, complete: summary.complete && !changed },
    };
  });
}

/** The ids of the holds waiting for this member, read without their arguments (the count every page shows). */
export async function waitingIdsOf(ctx: ServiceContext, member: Member): Promise<string[]> {
  const [pending, capacityOf] = await Promise.all([
    listPendingApprovers(ctx.db, member.workspaceId, WAITING_CAP),
    capacities(ctx, member),
  ]);
  return pending.filter((hold) => capacityOf(hold).blocker === null).map((hold) => hold.id);
}

/**
 * Whether a pending hold waits for this member (no blocker): not expired, not decided by them (nor for
 * them by their delegate), theirs to decide, or a delegator's (`onBehalfOf`), and not requested by an
 * agent of theirs.
 */
async function capacities(ctx: ServiceContext, member: Member) {
  const [deciders, decisions] = await Promise.all([
    loadDeciders(ctx.db, member.workspaceId),
    pendingDecisions(ctx.db, member.workspaceId),
  ]);
  const now = ctx.now();
  const self = deciders.byId.get(member.id);
  return (hold: {
    id: string;
    approvers: string[];
    expiresAt: number | null;
    agentId: string;
    requestedFor: string | null;
  }): Capacity =>
    self === undefined
      ? { blocker: 'not_an_approver' }
      : deciders.capacity({ ...hold, status: 'pending' }, self, decisions.get(hold.id) ?? [], now);
}

/**
 * One page of the workspace's holds for `listHoldRecords` (the Core API's hold list; the app's History
 * page has services/history.ts), newest first: `limit` holds matching the filters, older than
 * `before`, the nearest ones newer than `after`, or the newest (also when fewer than a page are newer
 * than `after`). With the cursors of the pages either side, each null when no hold matches there.
 * Keyset paging, so pages meet exactly whatever arrives meanwhile. The tool filter is the rules' glob
 * (`compileGlob`): SQL narrows by LIKE, each line is checked here, batch after batch until the page is
 * full. Arguments are never read, only their stored summaries.
 */
async function historyOf(
  ctx: ServiceContext,
  workspaceId: string,
  filters: HoldFilters,
  page: { before?: Pick<Hold, 'createdAt' | 'id'> | null; after?: Pick<Hold, 'createdAt' | 'id'> | null },
  limit = 50,
): Promise<{
  lines: HoldLine[];
  newer: Pick<Hold, 'createdAt' | 'id'> | null;
  older: Pick<Hold, 'createdAt' | 'id'> | null;
}> {
  const glob = filters.tool ? compileGlob(filters.tool) : null;
  const read = async (
    direction: 'older' | 'newer',
    from: Pick<Hold, 'createdAt' | 'id'> | null,
    want: number,
  ) => {
    const batch = glob ? Math.max(want, 200) : want;
    const found: HoldLine[] = [];
    for (;;) {
      const lines = await listHolds(ctx.db, workspaceId, filters, { direction, from }, batch);
      found.push(...(glob ? lines.filter((line) => glob(line.toolName)) : lines));
      if (found.length >= want || lines.length < batch) return found.slice(0, want);
      from = lines.at(-1)!;
    }
  };
  const cursor = (line: HoldLine | undefined) => (line ? { createdAt: line.createdAt, id: line.id } : null);
  const any = async (direction: 'older' | 'newer', from: Pick<Hold, 'createdAt' | 'id'> | null) =>
    from !== null && (await read(direction, from, 1)).length > 0;

  if (page.after) {
    const newer = await read('newer', page.after, limit + 1);
    if (newer.length > limit) {
      const lines = newer.slice(0, limit).reverse();
      const older = cursor(lines.at(-1));
      return { lines, newer: cursor(lines[0]), older: (await any('older', older)) ? older : null };
    }
  }
  const before = page.after ? null : (page.before ?? null);
  const found = await read('older', before, limit + 1);
  const lines = found.slice(0, limit);
  // An empty page after a cursor still leads back to what is newer than that cursor.
  const first = cursor(lines[0]) ?? before;
  return {
    lines,
    newer: before && (await any('newer', first)) ? first : null,
    older: found.length > limit ? cursor(lines.at(-1)) : null,
  };
}

export async function holdDetail(ctx: ServiceContext, workspaceId: string, holdId: string) {
  const hold = await getHold(ctx, workspaceId, holdId);
  return { hold, decisions: await listHoldDecisions(ctx.db, hold.id) };
}

/**
 * A page of the workspace's holds, newest first, as the Core API's hold list and `approvals holds
 * list` show them: each line with a summary of its arguments, and the reference to pass as `before`
 * for the next page (null on the last).
 */
export async function listHoldRecords(
  ctx: ServiceContext,
  workspaceId: string,
  filters: HoldFilters,
  page: { before?: string; limit: number },
) {
  const from = page.before ? await getHold(ctx, workspaceId, page.before) : null;
  const found = await historyOf(ctx, workspaceId, filters, { before: from }, page.limit);
  const iso = (at: number | null) => (at === null ? null : new Date(at).toISOString());
  return {
    holds: found.lines.map((line) => ({
      id: line.id,
      status: line.status,
      created_at: iso(line.createdAt)!,
      expires_at: iso(line.expiresAt),
      tool_name: line.toolName,
      connection: line.connection,
      agent_identity: { id: line.agentId, label: line.agentLabel },
      environment: line.environment,
      approvals: { required: line.approvalsRequired, received: line.approvalsReceived },
      rule: line.ruleName,
      arguments_summary: line.argumentsSummary,
    })),
    next_before: found.older?.id ?? null,
  };
}
