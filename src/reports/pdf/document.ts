/**
 * The reports as PDF (pdfkit): the workspace's name and accent colour on every page, the period, page
 * numbers, the chain head the report was built from, charts where they read better than a table, and
 * tables whose header repeats on every page. Pages are written out as they are finished, so the
 * activity report streams however many holds it lists, in flat memory.
 *
 * pdfkit makes the document (pages, objects, cross-references) and draws the charts and paragraphs.
 * The page frame and the tables are written by these modules into a content stream of each page's own
 * (issue 22): a long activity report has a million cells, and pdfkit's `text()` takes each through
 * its line wrapper (kerning, word breaks, events), 20 s for 100,000 rows. Here a cell costs a sum
 * over a width table and a few bytes of PDF, only a value too wide for its column is wrapped or cut,
 * and the page streams are compressed off the main thread through one zlib stream.
 *
 * This module: a report's document, its pages' frame, the room left on a page, and the stream it is
 * sent as; the other modules here write the text, the content streams, the tables and the charts.
 */
import { Readable } from 'node:stream';
import PDFDocument from 'pdfkit';
import type { ReportHeading } from '../../services/reports.ts';
import { endPageStream, startPageStream } from './page-streams.ts';
import {
  accentOf,
  CHUNK,
  type Doc,
  INK,
  MARGIN,
  MAX_BUFFERED,
  MUTED,
  type Ref,
  RULE,
  stamp,
} from './style.ts';
import { documentFonts, type Fonts, hundredths, printable, standardFont, widthOf, winAnsi } from './text.ts';

/**
 * A document whose every page gets the branded band and the footer with its number and the chain head.
 * `compress`: whether pdfkit compresses what it draws itself (see startPageStream): worth it for the
 * oversight report's charts and figures on a few pages, not for the flip of the coordinates that is
 * all it writes on most of the activity report's thousands.
 */
export function startDocument(
  heading: ReportHeading,
  title: string,
  layout: 'portrait' | 'landscape',
  compress: boolean,
): Doc {
  const doc = new PDFDocument({
    size: 'A4',
    layout,
    margins: { top: MARGIN + 46, bottom: MARGIN + 22, left: MARGIN, right: MARGIN },
    autoFirstPage: false,
    compress,
    info: {
      Title: printable(`${title}: ${heading.workspace.name}`),
      Author: 'Action Approval Service',
      Subject: `${heading.period.from} to ${heading.period.to}`,
    },
  });
  const fonts: Fonts = {
    regular: standardFont(doc, 'Helvetica', 'Helvetica'),
    bold: standardFont(doc, 'Helvetica-Bold', 'HelveticaBold'),
  };
  documentFonts.set(doc, fonts);
  const accent = accentOf(heading);
  const head = heading.chainHead;
  const name = winAnsi(heading.workspace.name);
  const period = winAnsi(`${stamp(heading.period.from)} to ${stamp(heading.period.to)} UTC`);
  const evidence = head ? `chain head #${head.seq} ${head.hash.slice(0, 16)}…` : 'empty chain';
  const generated = winAnsi(`Generated ${stamp(heading.generatedAt)} UTC · ${evidence}`);
  let page = 0;
  doc.on('pageAdded', () => {
    page += 1;
    endPageStream(doc);
    const { width, height } = doc.page;
    const resources = doc.page.fonts as Record<string, Ref>;
    resources[fonts.regular.name] = fonts.regular.ref;
    resources[fonts.bold.name] = fonts.bold.ref;
    // The frame sits in the margins, where pdfkit's text() would open a new page.
    const frame = startPageStream(doc);
    const [left, right, footer] = [
      hundredths(MARGIN),
      hundredths(width - MARGIN),
      hundredths(height - MARGIN),
    ];
    frame.rect(accent, 0, 0, hundredths(width), 800);
    frame.line(RULE, left, hundredths(MARGIN + 38), right, hundredths(MARGIN + 38));
    frame.show(fonts.bold, 14, accent, left, hundredths(MARGIN - 8), name);
    frame.show(fonts.regular, 10, INK, left, hundredths(MARGIN + 10), winAnsi(title));
    frame.show(fonts.regular, 8, MUTED, left, hundredths(MARGIN + 24), period);
    frame.show(fonts.regular, 7, MUTED, left, footer, generated);
    const number = `Page ${page}`;
    const numberWidth = Math.round((7 * widthOf(fonts.regular, number)) / 10);
    frame.show(fonts.regular, 7, MUTED, right - numberWidth, footer, number);
    // pdfkit's own text goes on from the font the frame ended with, as when pdfkit drew the frame
    // (a section title's space above it is measured in that font).
    doc.font('Helvetica').fontSize(7);
    doc.x = MARGIN;
    doc.y = doc.page.margins.top;
  });
  doc.addPage();
  return doc;
}

export const contentBottom = (doc: Doc) => doc.page.height - doc.page.margins.bottom;
export const contentWidth = (doc: Doc) => doc.page.width - 2 * MARGIN;

/** Starts a new page unless `height` points still fit on this one. */
export function room(doc: Doc, height: number) {
  if (doc.y + height > contentBottom(doc)) doc.addPage();
}

export function sectionTitle(doc: Doc, text: string, height = 40) {
  room(doc, height + 24);
  doc.moveDown(0.6).fillColor(INK).font('Helvetica-Bold').fontSize(12).text(text, MARGIN);
  doc.moveDown(0.3);
}

/** What a document is sent as (see Sent). */
const sentStreams = new WeakMap<Doc, Readable>();

/** Waits while more than MAX_BUFFERED of the document is unread, so a slow download holds it back. */
export async function drained(doc: Doc) {
  const unread = () => doc.readableLength + (sentStreams.get(doc)?.readableLength ?? 0);
  while (unread() > MAX_BUFFERED && !doc.destroyed) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function evidenceSection(doc: Doc, heading: ReportHeading) {
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

export function filtersLine(doc: Doc, heading: ReportHeading) {
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

/**
 * The document as it is sent: pdfkit pushes every line of PDF syntax as a chunk of its own, some 40 a
 * page, which a response would write one by one (130,000 writes for 100,000 holds) and a slow reader
 * would leave piled up as as many small objects. They are taken as they come and sent in chunks of
 * CHUNK bytes; the document waits while MAX_BUFFERED of them are unread (see `drained`).
 */
export class Sent extends Readable {
  private readonly doc: Doc;
  private parts: Uint8Array[] = [];
  private size = 0;

  constructor(doc: Doc) {
    super({ highWaterMark: CHUNK });
    this.doc = doc;
    doc.on('data', (chunk: Uint8Array) => {
      this.parts.push(chunk);
      this.size += chunk.length;
      if (this.size >= CHUNK) this.release();
    });
    doc.on('end', () => {
      if (this.size > 0) this.release();
      this.push(null);
    });
    doc.on('error', (error) => this.destroy(error));
    sentStreams.set(doc, this);
  }

  private release() {
    this.push(Buffer.concat(this.parts, this.size));
    this.parts = [];
    this.size = 0;
  }

  override _read() {
    // Pushed as the document is written; the document waits for the reader in `drained`.
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void) {
    this.doc.destroy(); // a download that ends early stops the report
    done(error);
  }
}
