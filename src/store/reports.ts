/**
 * The read queries behind the reports. Every figure is counted by the database over the holds of the
 * period (index `holds_by_workspace_created_id`); the activity rows are read in keyset pages.
 */
import { columns, count, integer, json, nullable, text } from './columns.ts';
import type { Sql } from './db.ts';
import { holds } from './holds.ts';
import { Where } from './where.ts';

/** Whether any hold of the workspace has this tool name or agent id. */
export async function holdsCarry(sql: Sql, workspaceId: string, field: 'tool' | 'agent', value: string) {
  const column = field === 'tool' ? 'tool_name' : 'agent_id';
  return !!(await sql.one(`SELECT 1 AS found FROM holds WHERE workspace_id = $1 AND ${column} = $2 LIMIT 1`, [
    workspaceId,
    value,
  ]));
}

export interface ReportScope {
  workspaceId: string;
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  tool?: string;
  agent?: string;
}

/** The WHERE clause of a scope over `holds h`, and its parameters ($1…). */
function scoped(scope: ReportScope): Where {
  const where = new Where('h.workspace_id = $1 AND h.created_at >= $2 AND h.created_at < $3', [
    scope.workspaceId,
    scope.from,
    scope.to,
  ]);
  if (scope.tool !== undefined) where.and('h.tool_name = ?', scope.tool);
  if (scope.agent !== undefined) where.and('h.agent_id = ?', scope.agent);
  return where;
}

// Who decided a hold: a rule (allowed at once, or denied by a rule), or people (a verdict from a person).
// A hold its agent withdrew (channel `agent`) was decided by neither: it counts as undecided.
const BY_RULE = "(h.channel = 'rule' OR (h.verdict IS NULL AND h.submit_status = 'allowed'))";
const BY_PEOPLE = "(h.verdict IS NOT NULL AND h.channel NOT IN ('rule', 'agent'))";
const WAITED = "h.submit_status = 'pending'";

export async function outcomeCounts(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const rows = await sql.all(
    `SELECT h.status AS status, COUNT(*) AS n FROM holds h WHERE ${where} GROUP BY h.status`,
    where.params,
  );
  return new Map(
    columns({ status: text('status'), n: count('n') })
      .decodeAll(rows)
      .map((row) => [row.status, row.n]),
  );
}

const decisionFigures = columns({
  holds: count('holds'),
  by_rule: count('by_rule'),
  by_people: count('by_people'),
  waited: count('waited'),
  waited_closed: count('waited_closed'),
  expired: count('expired'),
  four_eyes: count('four_eyes'),
  four_eyes_approved: count('four_eyes_approved'),
  four_eyes_rejected: count('four_eyes_rejected'),
  four_eyes_expired: count('four_eyes_expired'),
});

export async function decisionTotals(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const row = await sql.one(
    `SELECT COUNT(*) AS holds,
       SUM(CASE WHEN ${BY_RULE} THEN 1 ELSE 0 END) AS by_rule,
       SUM(CASE WHEN ${BY_PEOPLE} THEN 1 ELSE 0 END) AS by_people,
       SUM(CASE WHEN ${WAITED} THEN 1 ELSE 0 END) AS waited,
       SUM(CASE WHEN ${WAITED} AND h.status <> 'pending' THEN 1 ELSE 0 END) AS waited_closed,
       SUM(CASE WHEN h.status = 'expired' THEN 1 ELSE 0 END) AS expired,
       SUM(CASE WHEN h.approvals_required >= 2 THEN 1 ELSE 0 END) AS four_eyes,
       SUM(CASE WHEN h.approvals_required >= 2 AND h.verdict = 'approve' THEN 1 ELSE 0 END) AS four_eyes_approved,
       SUM(CASE WHEN h.approvals_required >= 2 AND ${BY_PEOPLE} AND h.verdict = 'reject' THEN 1 ELSE 0 END) AS four_eyes_rejected,
       SUM(CASE WHEN h.approvals_required >= 2 AND h.status = 'expired' THEN 1 ELSE 0 END) AS four_eyes_expired
     FROM holds h WHERE ${where}`,
    where.params,
  );
  return decisionFigures.decode(row!);
}

/** Each person's decision counts once per channel it came through (four-eyes holds have several). */
export async function decisionsPerChannel(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const rows = await sql.all(
    `SELECT d.channel AS channel, COUNT(*) AS decisions FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
     WHERE ${where} GROUP BY d.channel ORDER BY COUNT(*) DESC, d.channel`,
    where.params,
  );
  return columns({ channel: text('channel'), decisions: count('decisions') }).decodeAll(rows);
}

const counted = columns({ n: count('n') });
const buckets = columns({ bucket: integer('bucket'), n: count('n') });

/**
 * Time from submission to the final human decision, in ms: how many, the nearest-rank median and 95th
 * percentile (two indexed seeks, so both backends agree), and a histogram in fixed buckets.
 */
export async function timeToDecision(sql: Sql, scope: ReportScope, bucketsMs: number[]) {
  const where = scoped(scope).and(BY_PEOPLE);
  const n = counted.decode(
    (await sql.one(`SELECT COUNT(*) AS n FROM holds h WHERE ${where}`, where.params))!,
  ).n;
  const rank = async (p: number) => {
    if (n === 0) return null;
    const offset = Math.max(0, Math.ceil(p * n) - 1);
    const row = await sql.one(
      `SELECT h.decided_at - h.created_at AS ms FROM holds h WHERE ${where}
       ORDER BY h.decided_at - h.created_at LIMIT 1 OFFSET ${offset}`,
      where.params,
    );
    return columns({ ms: count('ms') }).decode(row ?? {}).ms;
  };
  const cases = bucketsMs
    .map((limit, index) => `WHEN h.decided_at - h.created_at < ${limit} THEN ${index}`)
    .join(' ');
  const rows = await sql.all(
    `SELECT CASE ${cases} ELSE ${bucketsMs.length} END AS bucket, COUNT(*) AS n FROM holds h
     WHERE ${where} GROUP BY CASE ${cases} ELSE ${bucketsMs.length} END`,
    where.params,
  );
  const histogram = Array.from({ length: bucketsMs.length + 1 }, () => 0);
  for (const { bucket, n } of buckets.decodeAll(rows)) histogram[bucket] = n;
  return { decided: n, medianMs: await rank(0.5), p95Ms: await rank(0.95), histogram };
}

const toolFigures = columns({
  connection: text('connection'),
  tool: text('tool'),
  holds: count('holds'),
  allowed: count('allowed'),
  denied: count('denied'),
  approved: count('approved'),
  rejected: count('rejected'),
  expired: count('expired'),
  pending: count('pending'),
});

export async function perTool(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const rows = await sql.all(
    `SELECT h.connection AS connection, h.tool_name AS tool, COUNT(*) AS holds,
       SUM(CASE WHEN ${BY_RULE} AND h.verdict IS NULL THEN 1 ELSE 0 END) AS allowed,
       SUM(CASE WHEN h.channel = 'rule' THEN 1 ELSE 0 END) AS denied,
       SUM(CASE WHEN ${BY_PEOPLE} AND h.verdict = 'approve' THEN 1 ELSE 0 END) AS approved,
       SUM(CASE WHEN ${BY_PEOPLE} AND h.verdict = 'reject' THEN 1 ELSE 0 END) AS rejected,
       SUM(CASE WHEN h.status = 'expired' THEN 1 ELSE 0 END) AS expired,
       SUM(CASE WHEN h.status = 'pending' THEN 1 ELSE 0 END) AS pending
     FROM holds h WHERE ${where}
     GROUP BY h.connection, h.tool_name ORDER BY COUNT(*) DESC, h.connection, h.tool_name`,
    where.params,
  );
  return toolFigures.decodeAll(rows);
}

/** What reminders and escalation steps did for the scope's holds. */
export async function followUpTotals(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const row = await sql.one(
    `SELECT SUM(CASE WHEN e.kind = 'reminder' THEN 1 ELSE 0 END) AS reminders,
       SUM(CASE WHEN e.kind = 'escalation' THEN 1 ELSE 0 END) AS escalations,
       COUNT(DISTINCT CASE WHEN e.kind = 'escalation' THEN e.hold_id END) AS "holdsEscalated"
     FROM follow_up_events e JOIN holds h ON h.id = e.hold_id AND h.workspace_id = e.workspace_id
     WHERE ${where}`,
    where.params,
  );
  return columns({
    reminders: count('reminders'),
    escalations: count('escalations'),
    holdsEscalated: count('holdsEscalated'),
  }).decode(row ?? {});
}

const approverFigures = columns({
  name: text('name'),
  email: text('email'),
  decisions: count('decisions'),
  approvals: count('approvals'),
  rejections: count('rejections'),
  meanMs: count('meanMs'),
  asDelegate: count('asDelegate'),
});

/** Each member's decisions; `asDelegate`: those they made in another member's place. */
export async function perApprover(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const rows = await sql.all(
    `SELECT m.name AS name, m.email AS email, COUNT(*) AS decisions,
       SUM(CASE WHEN d.verdict = 'approve' THEN 1 ELSE 0 END) AS approvals,
       SUM(CASE WHEN d.verdict = 'reject' THEN 1 ELSE 0 END) AS rejections,
       AVG(d.decided_at - h.created_at) AS "meanMs",
       SUM(CASE WHEN d.on_behalf_of IS NOT NULL THEN 1 ELSE 0 END) AS "asDelegate"
     FROM hold_decisions d JOIN holds h ON h.id = d.hold_id JOIN members m ON m.id = d.member_id
     WHERE ${where} GROUP BY m.id, m.name, m.email ORDER BY COUNT(*) DESC, m.email`,
    where.params,
  );
  return approverFigures.decodeAll(rows).map((row) => ({ ...row, meanMs: Math.round(row.meanMs) }));
}

/** Tools still classified `new` (whenever first seen), with their holds in the scope. */
export async function unclassifiedTools(sql: Sql, scope: ReportScope) {
  const where = scoped(scope);
  const rows = await sql.all(
    `SELECT t.connection AS connection, t.name AS tool, t.first_seen_at AS "firstSeenAt",
       (SELECT COUNT(*) FROM holds h WHERE ${where} AND h.connection = t.connection AND h.tool_name = t.name) AS holds
     FROM tools t WHERE t.workspace_id = $1 AND t.classification = 'new'
     ORDER BY t.connection, t.name`,
    where.params,
  );
  return columns({
    connection: text('connection'),
    tool: text('tool'),
    firstSeenAt: nullable(integer('firstSeenAt')),
    holds: count('holds'),
  }).decodeAll(rows);
}

export interface ActivityRow {
  id: string;
  createdAt: number;
  connection: string;
  toolName: string;
  agentId: string;
  environment: string;
  status: string;
  verdict: string | null;
  channel: string | null;
  decidedAt: number | null;
  executionStatus: string | null;
  /** Names of the people who decided, in the order they did. */
  approvers: string[];
  /** For each of them, the name of the member they decided for as a delegate, else null. */
  onBehalfOf: (string | null)[];
  /** Reminders sent while the hold waited. */
  reminders: number;
  /** The escalation steps taken, in order: which, when, and the approver entries each added. */
  escalations: { step: number; afterMinutes: number; added: string[] }[];
}

/** What a row adds to the hold's own columns, read for a page of holds at once. */
type Extras = Pick<ActivityRow, 'approvers' | 'onBehalfOf' | 'reminders' | 'escalations'>;

const activityColumns = holds.pick(
  'id',
  'createdAt',
  'connection',
  'toolName',
  'agentId',
  'environment',
  'status',
  'verdict',
  'channel',
  'decidedAt',
  'executionStatus',
);
/** Who decided a hold of the page, and for whom (the delegate's `o`). */
const activityDeciders = columns({
  holdId: text('hold_id'),
  name: text('name'),
  forName: nullable(text('name')),
});
const remindersPerHold = columns({ holdId: text('hold_id'), n: count('n') });
/** An escalation step's event, its detail as the follow-up worker wrote it. */
const escalationSteps = columns({
  holdId: text('hold_id'),
  detail: json<{ step: number; after_minutes: number; added: string[] }>('detail'),
});

/** The scope's holds in order of submission, `size` at a time after `after` (keyset paging). */
export async function activityPage(
  sql: Sql,
  scope: ReportScope,
  after: { createdAt: number; id: string } | null,
  size: number,
): Promise<ActivityRow[]> {
  const where = scoped(scope);
  // The row comparison lets both engines seek in the (workspace, created_at, id) index.
  if (after) where.and('(h.created_at, h.id) > (?, ?)', after.createdAt, after.id);
  const rows = activityColumns.decodeAll(
    await sql.all(
      `SELECT ${activityColumns.select('h')}
       FROM holds h WHERE ${where} ORDER BY h.created_at, h.id LIMIT ${size}`,
      where.params,
    ),
  );
  if (rows.length === 0) return [];
  const deciders = await sql.all(
    `SELECT d.hold_id AS "holdId", m.name, o.name AS "forName" FROM hold_decisions d
     JOIN members m ON m.id = d.member_id LEFT JOIN members o ON o.id = d.on_behalf_of
     WHERE d.hold_id IN (${rows.map((_, index) => `$${index + 1}`).join(', ')})
     ORDER BY d.decided_at, m.name`,
    rows.map((row) => row.id),
  );
  // The follow-ups of the page's holds, found by the page's key range rather than a list of 1,000 ids
  // (SQLite binds numbered parameters in time that grows with the square of their number). The range's
  // times bound the index seek; the keys make it exact. Reminders are counted in SQL: a short `every`
  // can send hundreds for one hold.
  const [first, last] = [rows[0]!, rows[rows.length - 1]!];
  const page = scoped({ ...scope, from: first.createdAt, to: last.createdAt + 1 })
    .and('(h.created_at, h.id) >= (?, ?)', first.createdAt, first.id)
    .and('(h.created_at, h.id) <= (?, ?)', last.createdAt, last.id);
  const events = `FROM follow_up_events e JOIN holds h ON h.id = e.hold_id AND h.workspace_id = e.workspace_id
     WHERE ${page}`;
  const reminders = await sql.all(
    `SELECT e.hold_id AS "holdId", COUNT(*) AS n ${events} AND e.kind = 'reminder' GROUP BY e.hold_id`,
    page.params,
  );
  const escalations = await sql.all(
    `SELECT e.hold_id AS "holdId", e.detail ${events} AND e.kind = 'escalation'`,
    page.params,
  );
  const extras = new Map<string, Extras>(
    rows.map((row) => [row.id, { approvers: [], onBehalfOf: [], reminders: 0, escalations: [] }]),
  );
  for (const { holdId, name, forName } of activityDeciders.decodeAll(deciders)) {
    extras.get(holdId)!.approvers.push(name);
    extras.get(holdId)!.onBehalfOf.push(forName);
  }
  for (const { holdId, n } of remindersPerHold.decodeAll(reminders)) extras.get(holdId)!.reminders = n;
  for (const { holdId, detail } of escalationSteps.decodeAll(escalations)) {
    const { step, after_minutes, added } = detail;
    extras.get(holdId)!.escalations.push({ step, afterMinutes: after_minutes, added });
  }
  return rows.map((row) => {
    const extra = extras.get(row.id)!;
    // Steps due together share their time: their numbers order them.
    extra.escalations.sort((a, b) => a.step - b.step);
    return { ...row, ...extra };
  });
}
