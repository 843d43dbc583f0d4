/** The activity report: one table row per hold, streamed as the rows are read. */
import type { Readable } from 'node:stream';
import type { ActivityRow, ReportHeading } from '../../services/reports.ts';
import { decidersOf, stepText } from '../follow-ups.ts';
import { evidenceSection, filtersLine, Sent, startDocument } from './document.ts';
import { endDocument } from './page-streams.ts';
import type { Column } from './style.ts';
import { batchedTable } from './table.ts';

const twoDigits = (value: number) => (value < 10 ? `0${value}` : String(value));

/**
 * A cell made of two values, made once for each pair while they recur (a report has few tools,
 * verdicts and channels): fewer strings to make, and to flatten when they are measured.
 */
function pairs(): (first: string, second: string, make: (first: string, second: string) => string) => string {
  const made = new Map<string, Map<string, string>>();
  let count = 0;
  return (first, second, make) => {
    let inner = made.get(first);
    if (!inner) {
      if (count >= 1000) {
        made.clear();
        count = 0;
      }
      inner = new Map();
      made.set(first, inner);
    }
    let cell = inner.get(second);
    if (cell === undefined) {
      cell = make(first, second);
      inner.set(second, cell);
      count += 1;
    }
    return cell;
  };
}

/**
 * `stamp(ms(value))` for a column of rows in time order: the date is formatted once per day, the
 * time of day by hand.
 */
function stamper(): (value: number | null) => string {
  const DAY = 86_400_000;
  let day = NaN;
  let date = '';
  return (value) => {
    if (value === null) return '—';
    const today = Math.floor(value / DAY);
    if (today !== day) {
      day = today;
      date = new Date(today * DAY).toISOString().slice(0, 10);
    }
    const seconds = Math.floor((value - today * DAY) / 1000);
    const clock = `${twoDigits(Math.floor(seconds / 3600))}:${twoDigits(Math.floor(seconds / 60) % 60)}`;
    return `${date} ${clock}:${twoDigits(seconds % 60)}`;
  };
}

/** As wide as a landscape page between its margins (762 points), the follow-ups included. */
const ACTIVITY_COLUMNS: Column[] = [
  { title: 'Reference', width: 146 },
  { title: 'Created (UTC)', width: 70 },
  { title: 'Connection / tool', width: 76, wrap: true },
  { title: 'Agent', width: 60, wrap: true },
  { title: 'Env', width: 22 },
  { title: 'Status', width: 48 },
  { title: 'Verdict / channel', width: 66 },
  { title: 'Approvers', width: 72, wrap: true },
  { title: 'Decided (UTC)', width: 70 },
  { title: 'Execution', width: 40 },
  { title: 'Reminders, escalation', width: 92, wrap: true },
];

/** `2 reminders; escalated: group:oncall after 15 min; role:admin after 45 min`, or a dash. */
function followUpsCell({ reminders, escalations }: ActivityRow): string {
  if (reminders === 0 && escalations.length === 0) return '—';
  const parts = reminders === 0 ? [] : [`${reminders} reminder${reminders === 1 ? '' : 's'}`];
  if (escalations.length > 0) parts.push(`escalated: ${escalations.map(stepText).join('; ')}`);
  return parts.join('; ');
}

/** The activity report: one table row per hold, streamed as the rows are read. */
export function activityPdf(heading: ReportHeading, pages: AsyncIterable<ActivityRow[]>): Readable {
  const doc = startDocument(heading, 'Activity report', 'landscape', false);
  /** Each batch is a page of holds, as read; its rows become cells one at a time. */
  async function* batches(): AsyncGenerator<readonly (ActivityRow | null)[]> {
    let count = 0;
    for await (const page of pages) {
      count += page.length;
      yield page;
    }
    if (count === 0) yield [null];
  }
  const [created, decided] = [stamper(), stamper()];
  const [tools, verdicts, statuses] = [pairs(), pairs(), pairs()];
  // One array for every row: the table reads a row's cells before it asks for the next.
  const cells: string[] = [];
  const cellsOf = (row: ActivityRow | null) => {
    if (row === null) return ['No holds in this period.'];
    cells[0] = row.id;
    cells[1] = created(row.createdAt);
    cells[2] = tools(row.connection, row.toolName, (connection, tool) => `${connection} / ${tool}`);
    cells[3] = row.agentId;
    cells[4] = row.environment;
    cells[5] = statuses(row.status, '', (status) => status.replace('_', ' '));
    cells[6] = row.verdict
      ? verdicts(row.verdict, String(row.channel), (verdict, channel) => `${verdict} / ${channel}`)
      : '—';
    // A delegate's decision names whom it was for: `Dan for Ann`.
    const deciders = row.onBehalfOf.some((name) => name !== null) ? decidersOf(row) : row.approvers;
    cells[7] = deciders.length === 1 ? deciders[0]! : deciders.join(', ') || '—';
    cells[8] = decided(row.decidedAt);
    cells[9] = row.executionStatus ?? '—';
    cells[10] = followUpsCell(row);
    return cells;
  };
  void (async () => {
    filtersLine(doc, heading);
    await batchedTable(doc, ACTIVITY_COLUMNS, batches(), cellsOf);
    evidenceSection(doc, heading);
    endDocument(doc);
  })().catch((error: unknown) => doc.destroy(error as Error));
  return new Sent(doc);
}
