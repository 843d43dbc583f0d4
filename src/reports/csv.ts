/**
 * The reports as CSV: RFC 4180 (CRLF, quoted where needed), UTF-8, one header row. A text cell that a
 * spreadsheet could take for a formula gets a leading apostrophe.
 */
import { type ActivityRow, type OversightReport, type ReportHeading } from '../services/reports.ts';
import { decidersOf, stepText } from './follow-ups.ts';

type Cell = string | number | null;

/**
 * A formula: a cell starting with a tab or CR, or with = + - @ (or their full-width forms) at its start
 * or after a line break, behind any blanks, separators or quotes. Spreadsheets trim blanks, split on
 * ; or | in some locales, and fold full-width signs, so each of these can still start a formula.
 */
const FORMULA = /^[\t\r]|(?:^|[\r\n])[\s,;|"'\uFF02\uFF07\uFF0C\uFF1B\uFF5C]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20]/;

function cell(value: Cell): string {
  if (value === null) return '';
  let text = String(value);
  if (typeof value === 'string' && FORMULA.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

const csvRecord = (cells: Cell[]) => `${cells.map(cell).join(',')}\r\n`;

/** A CSV of rows read batch by batch: the header row, then one record per row. */
export async function* csvRows<Row>(
  columns: readonly string[],
  batches: AsyncIterable<Row[]>,
  record: (row: Row) => Cell[],
): AsyncGenerator<string> {
  yield csvRecord([...columns]);
  for await (const batch of batches) yield batch.map((row) => csvRecord(record(row))).join('');
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const seconds = (ms: number | null) => (ms === null ? null : ms / 1000);
const share = (part: number, whole: number) => (whole === 0 ? null : (part / whole).toFixed(4));

export const ACTIVITY_COLUMNS = [
  'reference',
  'created_at',
  'connection',
  'tool_name',
  'agent_id',
  'environment',
  'status',
  'verdict',
  'channel',
  'approvers',
  'decided_at',
  'execution_status',
  // Added later: at the end, so tools that read the columns by position keep working.
  'reminders',
  'escalations',
  'escalated_to',
  'on_behalf_of',
];

/** The activity report: the header row, then one row per hold, page by page. */
export const activityCsv = (pages: AsyncIterable<ActivityRow[]>) =>
  csvRows(ACTIVITY_COLUMNS, pages, (row) => [
    row.id,
    iso(row.createdAt),
    row.connection,
    row.toolName,
    row.agentId,
    row.environment,
    row.status,
    row.verdict,
    row.channel,
    row.approvers.join('; '),
    iso(row.decidedAt),
    row.executionStatus,
    row.reminders,
    row.escalations.length,
    row.escalations.map(stepText).join('; '),
    decidersOf(row)
      .filter((_, index) => row.onBehalfOf[index] !== null)
      .join('; '),
  ]);

/** What both reports were built from, as `report` and `evidence` rows of the oversight CSV. */
function headingRows(heading: ReportHeading): Cell[][] {
  const head = heading.chainHead;
  return [
    ['report', null, 'workspace', heading.workspace.name],
    ['report', null, 'from', heading.period.from],
    ['report', null, 'to', heading.period.to],
    ['report', null, 'tool', heading.filters.tool],
    ['report', null, 'agent', heading.filters.agent],
    ['report', null, 'generated_at', heading.generatedAt],
    ['evidence', null, 'head_seq', head?.seq ?? 0],
    ['evidence', null, 'head_hash', head?.hash ?? null],
    ['evidence', null, 'key_id', head?.key_id ?? null],
    ['evidence', null, 'signed_at', head?.signed_at ?? null],
  ];
}

/** The oversight report in long form: one figure per row, `section,subject,metric,value`. */
export function oversightCsv(report: OversightReport): string {
  const { decidedBy, timeToDecision: time, expiry, fourEyes } = report;
  const rows: Cell[][] = [
    ...headingRows(report),
    ['totals', null, 'holds', report.holds],
    ['totals', null, 'reminders', report.followUps.reminders],
    ['totals', null, 'escalations', report.followUps.escalations],
    ['totals', null, 'holds_escalated', report.followUps.holdsEscalated],
    ['totals', null, 'delegated_decisions', report.followUps.delegatedDecisions],
    ...report.outcomes.map(({ status, holds }): Cell[] => ['outcome', null, status, holds]),
    ['decided_by', null, 'rule', decidedBy.rule],
    ['decided_by', null, 'people', decidedBy.people],
    ['decided_by', null, 'undecided', decidedBy.undecided],
    ['decided_by', null, 'share_rule', share(decidedBy.rule, report.holds)],
    ['decided_by', null, 'share_people', share(decidedBy.people, report.holds)],
    ...report.channels.map(({ channel, decisions }): Cell[] => ['channel', channel, 'decisions', decisions]),
    ['time_to_decision', null, 'decided', time.decided],
    ['time_to_decision', null, 'median_seconds', seconds(time.medianMs)],
    ['time_to_decision', null, 'p95_seconds', seconds(time.p95Ms)],
    ...time.histogram.map(({ bucket, holds }): Cell[] => ['time_to_decision', bucket, 'holds', holds]),
    ['expiry', null, 'waited', expiry.waited],
    ['expiry', null, 'finished', expiry.finished],
    ['expiry', null, 'expired', expiry.expired],
    ['expiry', null, 'rate', expiry.rate === null ? null : expiry.rate.toFixed(4)],
    ['four_eyes', null, 'holds', fourEyes.holds],
    ['four_eyes', null, 'approved', fourEyes.approved],
    ['four_eyes', null, 'rejected', fourEyes.rejected],
    ['four_eyes', null, 'expired', fourEyes.expired],
    ...report.tools.flatMap(({ connection, tool, ...figures }) =>
      Object.entries(figures).map(([metric, value]): Cell[] => [
        'tool',
        `${connection}/${tool}`,
        metric,
        value,
      ]),
    ),
    ...report.approvers.flatMap((a): Cell[][] => [
      ['approver', a.email, 'name', a.name],
      ['approver', a.email, 'decisions', a.decisions],
      ['approver', a.email, 'approvals', a.approvals],
      ['approver', a.email, 'rejections', a.rejections],
      ['approver', a.email, 'mean_seconds', seconds(a.meanMs)],
      ['approver', a.email, 'as_delegate', a.asDelegate],
    ]),
    ...report.unclassified.flatMap((u): Cell[][] => [
      ['unclassified', `${u.connection}/${u.tool}`, 'first_seen_at', iso(u.firstSeenAt)],
      ['unclassified', `${u.connection}/${u.tool}`, 'holds', u.holds],
    ]),
  ];
  return csvRecord(['section', 'subject', 'metric', 'value']) + rows.map(csvRecord).join('');
}
