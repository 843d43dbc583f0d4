/**
 * The reports as PDF (pdfkit): the workspace's name and accent colour on every page, the period, page
 * numbers, the chain head the report was built from, charts where they read better than a table, and
 * tables whose header repeats on every page. Pages are written out as they are finished, so the
 * activity report streams however many holds it lists.
 */
import PDFDocument from 'pdfkit';
import type { ActivityRow, OversightReport, ReportHeading } from '../services/reports.ts';

type Doc = PDFKit.PDFDocument;

interface Column {
  title: string;
  width: number;
  align?: 'left' | 'right';
  /** For names that must never be cut (tools, agents, people): wrapped onto more lines instead. */
  wrap?: boolean;
}

const MARGIN = 40;
const ROW = 14;
const INK = '#1f2933';
const MUTED = '#6b7785';
const RULE = '#d9dee4';
const DEFAULT_ACCENT = '#2563eb';
const STATUS_COLOURS: Record<string, string> = {
  auto_allowed: '#3b82f6',
  pending: '#a3a3a3',
  approved: '#16a34a',
  rejected: '#dc2626',
  expired: '#f59e0b',
  executed: '#0d9488',
  failed: '#7c3aed',
};
/** Buffered output above which the writer waits for the reader (a slow download). */
const MAX_BUFFERED = 4 * 1024 * 1024;

/**
 * The standard PDF fonts cover Windows-1252 only; anything else would come out as wrong glyphs, so it
 * is shown as "?" (the CSV keeps every character). So are control characters: pdfkit writes one
 * below 0x10 as a single hex digit, which shifts the text after it, and an agent could so make a
 * tool name print as another.
 */
const WIN_ANSI_EXTRAS = '€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ';
const isPrintable = (c: string) => {
  const code = c.charCodeAt(0);
  return (code >= 0x20 && code < 0x7f) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRAS.includes(c);
};
const printable = (text: string) => [...text].map((c) => (isPrintable(c) ? c : '?')).join('');

const stamp = (iso: string | null) => (iso === null ? '—' : `${iso.slice(0, 10)} ${iso.slice(11, 19)}`);
const ms = (value: number | null) => (value === null ? null : new Date(value).toISOString());
const percent = (part: number, whole: number) =>
  whole === 0 ? '—' : `${((100 * part) / whole).toFixed(1)} %`;

export function duration(value: number | null): string {
  if (value === null) return '—';
  if (value < 60_000) return `${(value / 1000).toFixed(1)} s`;
  if (value < 3_600_000) return `${(value / 60_000).toFixed(1)} min`;
  return `${(value / 3_600_000).toFixed(1)} h`;
}

function accentOf(heading: ReportHeading): string {
  const colour = heading.workspace.accentColor;
  return colour && /^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$/.test(colour) ? colour : DEFAULT_ACCENT;
}

/** A document whose every page gets the branded band and the footer with its number and the chain head. */
function startDocument(heading: ReportHeading, title: string, layout: 'portrait' | 'landscape'): Doc {
  const doc = new PDFDocument({
    size: 'A4',
    layout,
    margins: { top: MARGIN + 46, bottom: MARGIN + 22, left: MARGIN, right: MARGIN },
    autoFirstPage: false,
    info: {
      Title: printable(`${title}: ${heading.workspace.name}`),
      Author: 'Action Approval Service',
      Subject: `${heading.period.from} to ${heading.period.to}`,
    },
  });
  const accent = accentOf(heading);
  const head = heading.chainHead;
  let page = 0;
  doc.on('pageAdded', () => {
    page += 1;
    const { width, height } = doc.page;
    const bottom = doc.page.margins.bottom;
    doc.page.margins.bottom = 0; // the footer sits in the margin; writing there must not open a page
    doc.rect(0, 0, width, 8).fill(accent);
    doc.fillColor(accent).font('Helvetica-Bold').fontSize(14);
    doc.text(printable(heading.workspace.name), MARGIN, MARGIN - 8, { lineBreak: false });
    doc.fillColor(INK).font('Helvetica').fontSize(10);
    doc.text(title, MARGIN, MARGIN + 10, { lineBreak: false });
    const period = `${stamp(heading.period.from)} to ${stamp(heading.period.to)} UTC`;
    doc.fillColor(MUTED).fontSize(8);
    doc.text(period, MARGIN, MARGIN + 24, { lineBreak: false });
    doc
      .moveTo(MARGIN, MARGIN + 38)
      .lineTo(width - MARGIN, MARGIN + 38)
      .strokeColor(RULE)
      .stroke();
    const evidence = head ? `chain head #${head.seq} ${head.hash.slice(0, 16)}…` : 'empty chain';
    doc.fillColor(MUTED).fontSize(7);
    doc.text(`Generated ${stamp(heading.generatedAt)} UTC · ${evidence}`, MARGIN, height - MARGIN, {
      lineBreak: false,
    });
    doc.text(`Page ${page}`, width - MARGIN - 60, height - MARGIN, {
      width: 60,
      align: 'right',
      lineBreak: false,
    });
    doc.page.margins.bottom = bottom;
    doc.x = MARGIN;
    doc.y = doc.page.margins.top;
  });
  doc.addPage();
  return doc;
}

const contentBottom = (doc: Doc) => doc.page.height - doc.page.margins.bottom;
const contentWidth = (doc: Doc) => doc.page.width - 2 * MARGIN;

/** Starts a new page unless `height` points still fit on this one. */
function room(doc: Doc, height: number) {
  if (doc.y + height > contentBottom(doc)) doc.addPage();
}

function sectionTitle(doc: Doc, text: string, height = 40) {
  room(doc, height + 24);
  doc.moveDown(0.6).fillColor(INK).font('Helvetica-Bold').fontSize(12).text(text, MARGIN);
  doc.moveDown(0.3);
}

const bodyFont = (doc: Doc) => doc.font('Helvetica').fontSize(7).fillColor(INK);

/** A body row's height: one line, or as many as its longest wrapped cell needs. */
function rowHeight(doc: Doc, columns: Column[], values: string[]): number {
  bodyFont(doc);
  let height = ROW;
  for (const [index, column] of columns.entries()) {
    const text = printable(values[index] ?? '');
    // Measuring the width first is cheaper than laying out every cell of a long report.
    if (!column.wrap || doc.widthOfString(text) <= column.width - 4) continue;
    height = Math.max(height, doc.heightOfString(text, { width: column.width - 4 }) + 7);
  }
  return height;
}

/** One row of cells; a header's cells (bold) are cut with an ellipsis, a body row's wrap where marked. */
function cells(doc: Doc, columns: Column[], values: string[], y: number, bold: boolean) {
  if (bold) doc.font('Helvetica-Bold').fontSize(7.5).fillColor(INK);
  else bodyFont(doc);
  let x = MARGIN;
  for (const [index, column] of columns.entries()) {
    const wrap = column.wrap && !bold;
    doc.text(printable(values[index] ?? ''), x + 2, y + 3.5, {
      width: column.width - 4,
      align: column.align ?? 'left',
      ...(wrap ? {} : { height: ROW, lineBreak: false, ellipsis: true }),
    });
    x += column.width;
  }
}

/** A table whose header row repeats at the top of every page it runs onto. */
async function table(doc: Doc, columns: Column[], rows: Iterable<string[]> | AsyncIterable<string[]>) {
  const width = columns.reduce((sum, column) => sum + column.width, 0);
  const header = () => {
    room(doc, 2 * ROW);
    const y = doc.y;
    doc.rect(MARGIN, y, width, ROW).fill('#eef1f4');
    cells(
      doc,
      columns,
      columns.map((column) => column.title),
      y,
      true,
    );
    doc.y = y + ROW;
  };
  header();
  let striped = false;
  for await (const row of rows) {
    const height = rowHeight(doc, columns, row);
    if (doc.y + height > contentBottom(doc)) {
      doc.addPage();
      header();
    }
    const y = doc.y;
    if ((striped = !striped)) doc.rect(MARGIN, y, width, height).fill('#f8f9fb');
    cells(doc, columns, row, y, false);
    doc.y = y + height;
  }
  doc
    .moveTo(MARGIN, doc.y)
    .lineTo(MARGIN + width, doc.y)
    .strokeColor(RULE)
    .stroke();
  doc.x = MARGIN;
  doc.moveDown(0.5);
}

/** Horizontal bars, one per label, scaled to the largest. */
function barChart(doc: Doc, bars: { label: string; value: number; colour: string }[]) {
  const labelWidth = 90;
  const maxBar = contentWidth(doc) - labelWidth - 50;
  const largest = Math.max(1, ...bars.map((bar) => bar.value));
  room(doc, bars.length * 16 + 8);
  for (const bar of bars) {
    const y = doc.y;
    doc.font('Helvetica').fontSize(8).fillColor(INK);
    doc.text(bar.label, MARGIN, y + 2, { width: labelWidth - 6, lineBreak: false });
    const length = (maxBar * bar.value) / largest;
    if (length > 0) doc.rect(MARGIN + labelWidth, y, length, 11).fill(bar.colour);
    doc.fillColor(INK).text(String(bar.value), MARGIN + labelWidth + length + 4, y + 2, { lineBreak: false });
    doc.y = y + 16;
  }
  doc.x = MARGIN;
}

/** Vertical bars with their labels underneath: a histogram. */
function columnChart(doc: Doc, columns: { label: string; value: number }[], colour: string) {
  const height = 110;
  const slot = contentWidth(doc) / columns.length;
  const largest = Math.max(1, ...columns.map((column) => column.value));
  room(doc, height + 40);
  const base = doc.y + height + 12;
  for (const [index, column] of columns.entries()) {
    const x = MARGIN + index * slot;
    const barHeight = (height * column.value) / largest;
    if (barHeight > 0) doc.rect(x + slot * 0.2, base - barHeight, slot * 0.6, barHeight).fill(colour);
    doc.font('Helvetica').fontSize(8).fillColor(INK);
    doc.text(String(column.value), x, base - barHeight - 11, {
      width: slot,
      align: 'center',
      lineBreak: false,
    });
    doc.text(column.label, x, base + 4, { width: slot, align: 'center', lineBreak: false });
  }
  doc
    .moveTo(MARGIN, base)
    .lineTo(MARGIN + contentWidth(doc), base)
    .strokeColor(RULE)
    .stroke();
  doc.x = MARGIN;
  doc.y = base + 22;
}

/** Label–value pairs in two columns. */
function figures(doc: Doc, pairs: [string, string][]) {
  const half = contentWidth(doc) / 2;
  for (let index = 0; index < pairs.length; index += 2) {
    room(doc, 18);
    const y = doc.y;
    for (const [offset, pair] of pairs.slice(index, index + 2).entries()) {
      const x = MARGIN + offset * half;
      doc.font('Helvetica').fontSize(8).fillColor(MUTED).text(pair[0], x, y, { lineBreak: false });
      doc
        .font('Helvetica-Bold')
        .fontSize(11)
        .fillColor(INK)
        .text(pair[1], x + 150, y - 2, { lineBreak: false });
    }
    doc.y = y + 18;
  }
  doc.x = MARGIN;
}

function evidenceSection(doc: Doc, heading: ReportHeading) {
  sectionTitle(doc, 'Evidence');
  const head = heading.chainHead;
  doc.font('Helvetica').fontSize(8).fillColor(INK);
  if (!head) {
    doc.text('The workspace has no evidence entries yet.');
    return;
  }
  doc.text(
    `This report was built from the workspace ${heading.workspace.id} with its evidence chain at entry ` +
      `#${head.seq}. Check the chain with GET /api/v1/audit/verify, or offline from an export with the SDK.`,
    { width: contentWidth(doc) },
  );
  doc.moveDown(0.4);
  doc.font('Courier').fontSize(8);
  doc.text(`head seq   ${head.seq}`);
  doc.text(`head hash  ${head.hash}`);
  doc.text(`signed at  ${head.signed_at}  key ${head.key_id}`);
  doc.font('Helvetica');
}

function filtersLine(doc: Doc, heading: ReportHeading) {
  const { tool, agent } = heading.filters;
  if (tool === null && agent === null) return;
  const parts = [tool === null ? null : `tool ${tool}`, agent === null ? null : `agent ${agent}`].filter(
    Boolean,
  );
  doc
    .font('Helvetica-Oblique')
    .fontSize(8)
    .fillColor(MUTED)
    .text(printable(`Only ${parts.join(', ')}.`));
  doc.moveDown(0.3);
}

/** The oversight report: figures, charts and tables; small enough to be written in one go. */
export function oversightPdf(report: OversightReport): Doc {
  const doc = startDocument(report, 'Oversight report', 'portrait');
  void (async () => {
    filtersLine(doc, report);
    const { decidedBy, timeToDecision: time, expiry, fourEyes } = report;
    sectionTitle(doc, 'Summary');
    figures(doc, [
      ['Holds', String(report.holds)],
      ['Decided by rule', `${decidedBy.rule} (${percent(decidedBy.rule, report.holds)})`],
      ['Decided by people', `${decidedBy.people} (${percent(decidedBy.people, report.holds)})`],
      ['Undecided (pending, expired)', String(decidedBy.undecided)],
      ['Median time to decision', duration(time.medianMs)],
      ['95th percentile', duration(time.p95Ms)],
      ['Expiry rate', expiry.rate === null ? '—' : `${(100 * expiry.rate).toFixed(1)} %`],
      ['Four-eyes holds', String(fourEyes.holds)],
    ]);
    sectionTitle(doc, 'Outcomes', 130);
    barChart(
      doc,
      report.outcomes.map(({ status, holds }) => ({
        label: status.replace('_', ' '),
        value: holds,
        colour: STATUS_COLOURS[status] ?? MUTED,
      })),
    );
    sectionTitle(doc, `Time to a human decision (${time.decided} holds)`, 150);
    columnChart(
      doc,
      time.histogram.map(({ bucket, holds }) => ({ label: bucket, value: holds })),
      accentOf(report),
    );
    sectionTitle(doc, 'Expiry and four-eyes');
    await table(
      doc,
      [
        { title: 'Holds that waited for people', width: 160 },
        { title: 'Finished', width: 80, align: 'right' },
        { title: 'Expired', width: 80, align: 'right' },
        { title: 'Expiry rate', width: 80, align: 'right' },
      ],
      [
        [
          String(expiry.waited),
          String(expiry.finished),
          String(expiry.expired),
          percent(expiry.expired, expiry.finished),
        ],
      ],
    );
    await table(
      doc,
      [
        { title: 'Four-eyes holds', width: 160 },
        { title: 'Approved', width: 80, align: 'right' },
        { title: 'Rejected', width: 80, align: 'right' },
        { title: 'Expired', width: 80, align: 'right' },
      ],
      [
        [
          String(fourEyes.holds),
          String(fourEyes.approved),
          String(fourEyes.rejected),
          String(fourEyes.expired),
        ],
      ],
    );
    sectionTitle(doc, 'Human decisions per channel');
    await table(
      doc,
      [
        { title: 'Channel', width: 160 },
        { title: 'Decisions', width: 80, align: 'right' },
      ],
      report.channels.map(({ channel, decisions }) => [channel, String(decisions)]),
    );
    sectionTitle(doc, 'Per tool');
    await table(
      doc,
      [
        { title: 'Connection', width: 70, wrap: true },
        { title: 'Tool', width: 120, wrap: true },
        { title: 'Holds', width: 45, align: 'right' },
        { title: 'Allowed', width: 45, align: 'right' },
        { title: 'Denied', width: 45, align: 'right' },
        { title: 'Approved', width: 50, align: 'right' },
        { title: 'Rejected', width: 50, align: 'right' },
        { title: 'Expired', width: 45, align: 'right' },
        { title: 'Pending', width: 45, align: 'right' },
      ],
      report.tools.map((t) => [
        t.connection,
        t.tool,
        ...[t.holds, t.allowed, t.denied, t.approved, t.rejected, t.expired, t.pending].map(String),
      ]),
    );
    sectionTitle(doc, 'Per approver');
    await table(
      doc,
      [
        { title: 'Name', width: 120, wrap: true },
        { title: 'E-mail', width: 150, wrap: true },
        { title: 'Decisions', width: 55, align: 'right' },
        { title: 'Approvals', width: 55, align: 'right' },
        { title: 'Rejections', width: 55, align: 'right' },
        { title: 'Mean time', width: 80, align: 'right' },
      ],
      report.approvers.map((a) => [
        a.name,
        a.email,
        String(a.decisions),
        String(a.approvals),
        String(a.rejections),
        duration(a.meanMs),
      ]),
    );
    sectionTitle(doc, 'Tools still unclassified');
    await table(
      doc,
      [
        { title: 'Connection', width: 100, wrap: true },
        { title: 'Tool', width: 180, wrap: true },
        { title: 'First seen', width: 110 },
        { title: 'Holds in period', width: 90, align: 'right' },
      ],
      report.unclassified.map((u) => [u.connection, u.tool, stamp(ms(u.firstSeenAt)), String(u.holds)]),
    );
    evidenceSection(doc, report);
    doc.end();
  })().catch((error: unknown) => doc.destroy(error as Error));
  return doc;
}

const ACTIVITY_COLUMNS: Column[] = [
  { title: 'Reference', width: 146 },
  { title: 'Created (UTC)', width: 80 },
  { title: 'Connection / tool', width: 104, wrap: true },
  { title: 'Agent', width: 80, wrap: true },
  { title: 'Env', width: 26 },
  { title: 'Status', width: 56 },
  { title: 'Verdict / channel', width: 66 },
  { title: 'Approvers', width: 84, wrap: true },
  { title: 'Decided (UTC)', width: 80 },
  { title: 'Execution', width: 48 },
];

/** The activity report: one table row per hold, streamed as the rows are read. */
export function activityPdf(heading: ReportHeading, pages: AsyncIterable<ActivityRow[]>): Doc {
  const doc = startDocument(heading, 'Activity report', 'landscape');
  async function* rows() {
    let count = 0;
    for await (const page of pages) {
      for (const row of page) {
        count += 1;
        // Laying out text is the slow part: let other requests run every hundred rows.
        if (count % 100 === 0) await new Promise((resolve) => setImmediate(resolve));
        yield [
          row.id,
          stamp(ms(row.createdAt)),
          `${row.connection} / ${row.toolName}`,
          row.agentId,
          row.environment,
          row.status.replace('_', ' '),
          row.verdict ? `${row.verdict} / ${row.channel}` : '—',
          row.approvers.join(', ') || '—',
          stamp(ms(row.decidedAt)),
          row.executionStatus ?? '—',
        ];
      }
      // A slow reader holds the rest back instead of letting the output pile up in memory.
      while (doc.readableLength > MAX_BUFFERED && !doc.destroyed) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    if (count === 0) yield ['No holds in this period.', '', '', '', '', '', '', '', '', ''];
  }
  void (async () => {
    filtersLine(doc, heading);
    await table(doc, ACTIVITY_COLUMNS, rows());
    evidenceSection(doc, heading);
    doc.end();
  })().catch((error: unknown) => doc.destroy(error as Error));
  return doc;
}
