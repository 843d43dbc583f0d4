/** The History page's CSV: every hold of its filters, one row each, written as the reports' CSV is. */
import { commentsOf, decidedBy, type HistoryRow } from '../services/history.ts';
import { csvRows } from './csv.ts';

export const HISTORY_COLUMNS = [
  'reference',
  'created_at',
  'connection',
  'tool_name',
  'agent_id',
  'agent_label',
  'environment',
  'status',
  'outcome',
  'decided_by',
  'decided_at',
  'comments',
  'arguments_summary',
];

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The header row, then a record per hold, batch by batch. Comments are whole here, not cut. */
export const historyCsv = (batches: AsyncIterable<HistoryRow[]>) =>
  csvRows(HISTORY_COLUMNS, batches, (row) => [
    row.id,
    iso(row.createdAt),
    row.connection,
    row.toolName,
    row.agentId,
    row.agentLabel,
    row.environment,
    row.status,
    row.outcome,
    decidedBy(row).join('; '),
    iso(row.decidedAt),
    commentsOf(row).join('\n'),
    row.argumentsSummary,
  ]);
