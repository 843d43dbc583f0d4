/** The reports' look (margins, colours, sizes) and how they write values (times, shares). */
import type { ReportHeading } from '../../services/reports.ts';

export type Doc = PDFKit.PDFDocument;
export type Ref = PDFKit.PDFKitReference;

export interface Column {
  title: string;
  width: number;
  align?: 'left' | 'right';
  /** For names that must never be cut (tools, agents, people): wrapped onto more lines instead. */
  wrap?: boolean;
}

export const MARGIN = 40;
export const ROW = 14;
export const INK = '#1f2933';
export const MUTED = '#6b7785';
export const RULE = '#d9dee4';
const DEFAULT_ACCENT = '#2563eb';
export const HEADER_FILL = '#eef1f4';
export const STRIPE_FILL = '#f8f9fb';
/** Font sizes of a table's header row and body. */
export const HEAD_SIZE = 7.5;
export const BODY_SIZE = 7;
export const STATUS_COLOURS: Record<string, string> = {
  auto_allowed: '#3b82f6',
  pending: '#a3a3a3',
  approved: '#16a34a',
  rejected: '#dc2626',
  expired: '#f59e0b',
  executed: '#0d9488',
  failed: '#7c3aed',
};
/** Buffered output above which the writer waits for the reader (a slow download). */
export const MAX_BUFFERED = 4 * 1024 * 1024;
/** The size of the chunks a report is sent in. */
export const CHUNK = 64 * 1024;

export const stamp = (iso: string | null) =>
  iso === null ? '—' : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
export const ms = (value: number | null) => (value === null ? null : new Date(value).toISOString());
export const percent = (part: number, whole: number) =>
  whole === 0 ? '—' : `${((100 * part) / whole).toFixed(1)} %`;

export function accentOf(heading: ReportHeading): string {
  const colour = heading.workspace.accentColor;
  return colour && /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(colour) ? colour : DEFAULT_ACCENT;
}
