/** Holds as lists and pages show them: lines with their arguments summarized, never read whole. */
import type { Hold } from '../domain/hold.ts';
import { decidingText } from '../domain/deciding-values.ts';
import { boolean, columns, integer, json, nullable, text } from './columns.ts';
import type { Db, Row, Sql } from './db.ts';
import { holds, LINE_SUMMARY_LENGTH } from './holds.ts';
import { asInJson, containing, likeOf, Where } from './where.ts';

/** A hold as a list shows it: everything but its arguments, which are summarized. */
export interface HoldLine extends Pick<
  Hold,
  | 'id'
  | 'environment'
  | 'connection'
  | 'toolName'
  | 'agentId'
  | 'agentLabel'
  | 'requestedFor'
  | 'status'
  | 'ruleName'
  | 'approvers'
  | 'approvalsRequired'
  | 'approvalsReceived'
  | 'createdAt'
  | 'expiresAt'
  | 'verdict'
  | 'channel'
  | 'decidedAt'
> {
  /** At most LINE_SUMMARY_LENGTH characters: `amount=4200, currency="EUR"`. */
  argumentsSummary: string;
  /** The arguments' length as JSON, in characters. */
  argumentsSize: number;
}

/** Holds stored before summaries were kept (migration 015) have theirs made on reading, while small. */
const LEGACY_SUMMARY_SOURCE = 64 * 1024;

/**
 * Nothing here reads `arguments`: on SQLite a column stored after a large value costs a walk through
 * its overflow pages, so these are all read from the covering index holds_pending_lines for the inbox.
 */
const lineColumns = holds.pick(
  'id',
  'environment',
  'connection',
  'toolName',
  'agentId',
  'agentLabel',
  'requestedFor',
  'status',
  'ruleName',
  'approvers',
  'approvalsRequired',
  'approvalsReceived',
  'createdAt',
  'expiresAt',
  'verdict',
  'channel',
  'decidedAt',
  'argumentsSummary',
  'argumentsSize',
);

/** A legacy hold's arguments, when small enough to summarize. */
const legacySources = columns({ id: text('id'), source: nullable(json<Record<string, unknown>>('source')) });

/** Rows as lines; the few stored before migration 015 get a summary made from their arguments. */
async function toLines(sql: Sql, read: Row[]): Promise<HoldLine[]> {
  const rows = lineColumns.decodeAll(read);
  const legacy = rows.filter((row) => row.argumentsSummary === null).map((row) => row.id);
  const sources = new Map<string, Record<string, unknown> | null>();
  if (legacy.length > 0) {
    const found = await sql.all(
      `SELECT id, CASE WHEN length(arguments) <= ${LEGACY_SUMMARY_SOURCE} THEN arguments END AS source
       FROM holds WHERE id IN (${legacy.map((_, i) => `$${i + 1}`).join(', ')})`,
      legacy,
    );
    for (const { id, source } of legacySources.decodeAll(found)) sources.set(id, source);
  }
  return rows.map((row) => {
    const source = sources.get(row.id) ?? null;
    const argumentsSummary =
      row.argumentsSummary ??
      (source === null
        ? `${row.argumentsSize} characters of arguments`
        : decidingText(source, [], LINE_SUMMARY_LENGTH).text);
    return { ...row, argumentsSummary };
  });
}

/** A workspace's pending holds as lines, soonest deadline first (index holds_pending_lines). */
export async function listPendingLines(sql: Sql, workspaceId: string, limit: number): Promise<HoldLine[]> {
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return toLines(sql, rows);
}

/** These holds of the workspace as lines, in no particular order; unknown ids are left out. */
export async function listLinesById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<HoldLine[]> {
  if (ids.length === 0) return [];
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return toLines(sql, rows);
}

const holdArguments = holds.pick('id', 'arguments', 'changedArguments');

/** The arguments of these holds of the workspace, parsed, as submitted and as an approver changed them. */
export async function listArgumentsById(
  sql: Sql,
  workspaceId: string,
  ids: readonly string[],
): Promise<Map<string, Pick<Hold, 'arguments' | 'changedArguments'>>> {
  if (ids.length === 0) return new Map();
  const rows = await sql.all(
    `SELECT ${holdArguments.select()} FROM holds WHERE workspace_id = $1 AND id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')})`,
    [workspaceId, ...ids],
  );
  return new Map(holdArguments.decodeAll(rows).map(({ id, ...args }) => [id, args]));
}

const pendingApprovers = holds.pick('id', 'approvers', 'expiresAt', 'agentId', 'requestedFor');

/** Pending holds without their arguments: enough to tell whom each waits for (a count on every page). */
export async function listPendingApprovers(sql: Sql, workspaceId: string, limit: number) {
  const rows = await sql.all(
    `SELECT ${pendingApprovers.select()}
     FROM holds WHERE workspace_id = $1 AND status = 'pending'
     ORDER BY expires_at IS NULL, expires_at, id LIMIT $2`,
    [workspaceId, limit],
  );
  return pendingApprovers.decodeAll(rows);
}

export interface HoldFilters {
  status?: string;
  /**
   * A glob over the tool's name (`payments.*`: `*` any run of characters, `?` one, the rest literal).
   * listHolds reads it as a LIKE pattern that matches at least what `compileGlob` matches (SQLite's LIKE
   * ignores ASCII case), so the caller checks each line with `compileGlob`.
   */
  tool?: string;
  /** The agent's id or its label, exactly. */
  agent?: string;
  /** Created at or after (epoch ms). */
  from?: number;
  /** Created before (epoch ms). */
  to?: number;
}

/**
 * Up to `limit` holds of the workspace as lines (never their arguments), read away from a (createdAt, id)
 * cursor on index holds_by_workspace_created_id: `older` ones newest first (from the newest when
 * `from` is null), `newer` ones oldest first.
 */
export async function listHolds(
  sql: Sql,
  workspaceId: string,
  filters: HoldFilters,
  page: { direction: 'older' | 'newer'; from: { createdAt: number; id: string } | null },
  limit: number,
): Promise<HoldLine[]> {
  const where = new Where('workspace_id = $1', [workspaceId]);
  if (filters.status) where.and('status = ?', filters.status);
  if (filters.tool) {
    // `\`, `%` and `_` are literal; `*` is `%`. A `?` is one UTF-16 unit for compileGlob but LIKE counts
    // characters, so a run of n `?` may be as few as n/2 characters (outside the BMP): `_…_%` then.
    const like = filters.tool.replace(/[\\%_*]|\?+/g, (part) =>
      part === '*'
        ? '%'
        : part[0] !== '?'
          ? `\\${part}`
          : part.length === 1
            ? '_'
            : `${'_'.repeat(Math.ceil(part.length / 2))}%`,
    );
    where.and(`tool_name LIKE ? ESCAPE '\\'`, like);
  }
  if (filters.agent) where.and('(agent_id = ? OR agent_label = ?)', filters.agent, filters.agent);
  if (filters.from !== undefined) where.and('created_at >= ?', filters.from);
  if (filters.to !== undefined) where.and('created_at < ?', filters.to);
  const newer = page.direction === 'newer';
  if (page.from) {
    const { createdAt, id } = page.from;
    const than = newer ? '>' : '<';
    where.and(`(created_at ${than} ? OR (created_at = ? AND id ${than} ?))`, createdAt, createdAt, id);
  }
  const order = newer ? 'created_at, id' : 'created_at DESC, id DESC';
  const rows = await sql.all(
    `SELECT ${lineColumns.select()} FROM holds WHERE ${where} ORDER BY ${order} LIMIT ${where.param(limit)}`,
    where.params,
  );
  return toLines(sql, rows);
}

/**
 * Arguments up to this long (as JSON) are searched whole; longer ones only by their summary. So a
 * search reads at most this much of each hold: 617 holds of a megabyte cost no more than small ones.
 */
export const SEARCHED_ARGUMENTS_SIZE = 16 * 1024;

/** Holds read at once by argumentsContaining. */
const SEARCH_BATCH = 500;

/**
 * For each word, those of these holds whose arguments (as JSON, so keys too) contain it, any case. The
 * caller passes only holds whose arguments are small (SEARCHED_ARGUMENTS_SIZE): each is read whole.
 */
export async function argumentsContaining(
  db: Db,
  workspaceId: string,
  holdIds: readonly string[],
  words: readonly string[],
): Promise<Set<string>[]> {
  const found = words.map(() => new Set<string>());
  for (let from = 0; from < holdIds.length; from += SEARCH_BATCH) {
    const batch = holdIds.slice(from, from + SEARCH_BATCH);
    const where = new Where('workspace_id = $1', [workspaceId]);
    where.and(`id IN (${batch.map(() => '?').join(', ')})`, ...batch);
    const flags = words.map((word, i) =>
      `${likeOf(db.dialect, 'arguments')} AS w${i}`.replace('?', where.param(containing(asInJson(word)))),
    );
    const rows = await db.all(`SELECT id, ${flags.join(', ')} FROM holds WHERE ${where}`, where.params);
    words.forEach((_, i) => {
      const flag = boolean(`w${i}`);
      for (const row of rows) if (flag.decode(row[flag.name])) found[i]!.add(String(row.id));
    });
  }
  return found;
}

const escalationColumns = columns({
  holdId: text('hold_id'),
  at: integer('at'),
  detail: json<Record<string, unknown>>('detail'),
});

/**
 * When escalation steps last asked this member (by e-mail) about each of these holds: the inbox's
 * "escalated to you at 09:15". One query for a page of lines.
 */
export async function escalationsTo(
  sql: Sql,
  workspaceId: string,
  email: string,
  holdIds: readonly string[],
): Promise<Map<string, number>> {
  if (holdIds.length === 0) return new Map();
  const rows = await sql.all(
    `SELECT ${escalationColumns.select()} FROM follow_up_events
     WHERE workspace_id = $1 AND kind = 'escalation' AND hold_id IN (${holdIds.map((_, i) => `$${i + 2}`).join(', ')})
     ORDER BY at`,
    [workspaceId, ...holdIds],
  );
  const asked = new Map<string, number>();
  for (const { holdId, at, detail } of escalationColumns.decodeAll(rows)) {
    if (Array.isArray(detail.notified) && detail.notified.includes(email)) asked.set(holdId, at);
  }
  return asked;
}
