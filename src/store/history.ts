/**
 * The History page's queries: a workspace's holds, newest first, filtered by substrings (any case) and
 * counted by outcome. Lines themselves come from hold-lines.ts (`listLinesById`): here only which holds,
 * in which order, and each one's outcome.
 */
import { columns, count, integer, text } from './columns.ts';
import type { Db } from './db.ts';
import { asInJson, containing, likeOf, Where } from './where.ts';

/** What became of a hold, as History counts it: `status` tells human from rule decisions only with `verdict` and `channel`. */
export type Outcome = 'pending' | 'approved' | 'rejected' | 'withdrawn' | 'expired' | 'allowed' | 'denied';
export const OUTCOMES: Outcome[] = [
  'approved',
  'rejected',
  'expired',
  'allowed',
  'denied',
  'withdrawn',
  'pending',
];

/**
 * One expression, so the totals and each row's label cannot disagree. Approved-then-executed holds keep
 * their verdict; an allowed call that ran has none. `rule` and `agent` are the channels of a rule's
 * denial and of a withdrawal (domain/hold.ts).
 */
const OUTCOME = `CASE WHEN status = 'pending' THEN 'pending' WHEN status = 'expired' THEN 'expired'
  WHEN verdict = 'approve' THEN 'approved' WHEN verdict = 'reject' AND channel = 'rule' THEN 'denied'
  WHEN verdict = 'reject' AND channel = 'agent' THEN 'withdrawn' WHEN verdict = 'reject' THEN 'rejected'
  ELSE 'allowed' END`;

/** A hold's place in the newest-first order; also the last hold a set of pages includes. */
export interface HistoryCursor {
  createdAt: number;
  id: string;
}

export interface HistoryFilters {
  status?: string;
  /** Substrings, any case: of the tool's name; of the agent's id or label; of a decider's name or e-mail. */
  tool?: string;
  agent?: string;
  decidedBy?: string;
  /** A substring, any case, of the arguments (as stored JSON) or of a decision's comment. */
  text?: string;
  /** Created at or after (epoch ms). */
  from?: number;
  /** Created before (epoch ms). */
  to?: number;
  /** Only holds up to this one in the order: the pages of one listing stay put while holds arrive. */
  upto?: HistoryCursor;
}

function whereOf(db: Db, workspaceId: string, filters: HistoryFilters): Where {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filters.status) where.and('status = ?', filters.status);
  if (filters.tool) where.and(likeOf(db.dialect, 'tool_name'), containing(filters.tool));
  if (filters.agent) {
    const pattern = containing(filters.agent);
    where.and(
      `(${likeOf(db.dialect, 'agent_id')} OR ${likeOf(db.dialect, 'agent_label')})`,
      pattern,
      pattern,
    );
  }
  if (filters.decidedBy) {
    const pattern = containing(filters.decidedBy);
    where.and(
      `EXISTS (SELECT 1 FROM hold_decisions d JOIN members m ON m.id = d.member_id
        WHERE d.hold_id = holds.id AND (${likeOf(db.dialect, 'm.name')} OR ${likeOf(db.dialect, 'm.email')}))`,
      pattern,
      pattern,
    );
  }
  if (filters.text) {
    where.and(
      `(${likeOf(db.dialect, 'arguments')} OR EXISTS (SELECT 1 FROM hold_decisions d
        WHERE d.hold_id = holds.id AND ${likeOf(db.dialect, 'd.comment')}))`,
      containing(asInJson(filters.text)),
      containing(filters.text),
    );
  }
  if (filters.from !== undefined) where.and('created_at >= ?', filters.from);
  if (filters.to !== undefined) where.and('created_at < ?', filters.to);
  if (filters.upto) {
    const { createdAt, id } = filters.upto;
    where.and('(created_at < ? OR (created_at = ? AND id <= ?))', createdAt, createdAt, id);
  }
  return where;
}

const outcomeCounts = columns({ outcome: text<Outcome>('outcome'), holds: count('holds') });

/** How many holds match, by outcome (outcomes with none left out). */
export async function countHistory(
  db: Db,
  workspaceId: string,
  filters: HistoryFilters,
): Promise<Map<Outcome, number>> {
  const where = whereOf(db, workspaceId, filters);
  const rows = await db.all(
    `SELECT ${OUTCOME} AS outcome, COUNT(*) AS holds FROM holds WHERE ${where} GROUP BY 1`,
    where.params,
  );
  return new Map(outcomeCounts.decodeAll(rows).map((row) => [row.outcome, row.holds]));
}

/** How many holds match that are newer than `than`: those that arrived since a listing was drawn. */
export async function countNewer(
  db: Db,
  workspaceId: string,
  filters: HistoryFilters,
  than: HistoryCursor,
): Promise<number> {
  const where = whereOf(db, workspaceId, { ...filters, upto: undefined });
  where.and('(created_at > ? OR (created_at = ? AND id > ?))', than.createdAt, than.createdAt, than.id);
  const row = await db.one(`SELECT COUNT(*) AS holds FROM holds WHERE ${where}`, where.params);
  return Number(row?.holds ?? 0);
}

const placed = columns({
  id: text('id'),
  createdAt: integer('created_at'),
  outcome: text<Outcome>('outcome'),
});
export type PlacedHold = ReturnType<typeof placed.decode>;

/**
 * Up to `limit` matching holds, newest first: the `offset`-th on (a numbered page), or those older than
 * `after`, from index holds_by_workspace_created_id (on SQLite it holds the outcome's columns too, migration 039).
 */
export async function listHistory(
  db: Db,
  workspaceId: string,
  filters: HistoryFilters,
  page: { offset: number } | { after: HistoryCursor | null },
  limit: number,
): Promise<PlacedHold[]> {
  const where = whereOf(db, workspaceId, filters);
  if ('after' in page && page.after) {
    const { createdAt, id } = page.after;
    where.and('(created_at < ? OR (created_at = ? AND id < ?))', createdAt, createdAt, id);
  }
  const limitParam = where.param(limit);
  const offsetParam = where.param('offset' in page ? page.offset : 0);
  const rows = await db.all(
    `SELECT id, created_at AS "createdAt", ${OUTCOME} AS outcome FROM holds WHERE ${where}
     ORDER BY created_at DESC, id DESC LIMIT ${limitParam} OFFSET ${offsetParam}`,
    where.params,
  );
  return placed.decodeAll(rows);
}
