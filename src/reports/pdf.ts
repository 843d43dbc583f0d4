/**
 * The reports as PDF (pdfkit): the workspace's name and accent colour on every page, the period, page
 * numbers, the chain head the report was built from, charts where they read better than a table, and
 * tables whose header repeats on every page. Pages are written out as they are finished, so the
 * activity report streams however many holds it lists, in flat memory.
 *
 * pdfkit makes the document (pages, objects, cross-references) and draws the charts and paragraphs.
 * The page frame and the tables are written by this module into a content stream of each page's own
 * (issue 22): a long activity report has a million cells, and pdfkit's `text()` takes each through
 * its line wrapper (kerning, word breaks, events), 20 s for 100,000 rows. Here a cell costs a sum
 * over a width table and a few bytes of PDF, only a value too wide for its column is wrapped or cut,
 * and the page streams are compressed off the main thread through one zlib stream.
 */
import { Readable } from 'node:stream';
import { constants, createDeflateRaw, type DeflateRaw, type ZlibOptions } from 'node:zlib';
import PDFDocument from 'pdfkit';
import type { ActivityRow, OversightReport, ReportHeading } from '../services/reports.ts';
import { decidersOf, stepText } from './follow-ups.ts';

type Doc = PDFKit.PDFDocument;
type Ref = PDFKit.PDFKitReference;

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
const HEADER_FILL = '#eef1f4';
const STRIPE_FILL = '#f8f9fb';
/** Font sizes of a table's header row and body. */
const HEAD_SIZE = 7.5;
const BODY_SIZE = 7;
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
/** The size of the chunks a report is sent in. */
const CHUNK = 64 * 1024;

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

// ---------------------------------------------------------------------------------------------------
// Writing text ourselves.

/** Windows-1252 codes of WIN_ANSI_EXTRAS, in its order (0x81, 0x8D, 0x8F, 0x90 and 0x9D are unused). */
const WIN_ANSI_HIGH = [
  0x80, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8e, 0x91, 0x92, 0x93, 0x94, 0x95,
  0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9e, 0x9f,
];
const WIN_ANSI_CODE = new Map([...WIN_ANSI_EXTRAS].map((c, index) => [c, WIN_ANSI_HIGH[index]!]));
/** The character each Windows-1252 code shows, where it shows one. */
const WIN_ANSI_CHAR: (string | undefined)[] = Array.from({ length: 256 }, (_, code) =>
  (code >= 0x20 && code < 0x7f) || code >= 0xa0 ? String.fromCharCode(code) : undefined,
);
for (const [c, code] of WIN_ANSI_CODE) WIN_ANSI_CHAR[code] = c;
const ELLIPSIS = String.fromCharCode(0x85);

/**
 * `text` in the standard fonts' encoding, one character per Windows-1252 byte, with "?" for what they
 * cannot show (as `printable`); written out as latin1, these are the bytes of a PDF string.
 */
function winAnsi(text: string): string {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || code > 0xff) {
      let bytes = text.slice(0, index);
      for (const c of text.slice(index)) {
        const point = c.codePointAt(0)!;
        const plain = (point >= 0x20 && point < 0x7f) || (point >= 0xa0 && point <= 0xff);
        bytes += plain ? c : String.fromCharCode(WIN_ANSI_CODE.get(c) ?? 0x3f);
      }
      return bytes;
    }
  }
  return text;
}

/**
 * Positions on a page in hundredths of a point: whole numbers, which add up exactly row after row and
 * are written as they are (the most precision pdfkit's drawing needs here).
 */
type Hundredths = number;
const hundredths = (points: number): Hundredths => Math.round(points * 100);
const round = (value: number) => Math.round(value * 100) / 100;

/** `#rgb` or `#rrggbb` as the three operands of `rg` or `RG`. */
function rgb(hex: string): string {
  const long = hex.length === 4 ? `#${hex[1]}${hex[1]}${hex[2]}${hex[2]}${hex[3]}${hex[3]}` : hex;
  const channel = (at: number) => round(parseInt(long.slice(at, at + 2), 16) / 255);
  return `${channel(1)} ${channel(3)} ${channel(5)}`;
}

/**
 * Helvetica's ascender, regular and bold (their AFM): pdfkit places a line's baseline this share of
 * the size below its top.
 */
const ASCENDER = 0.718;

/**
 * A standard font as this module writes it. Widths are in thousandths of the size (the fonts' own
 * units, whole numbers, so a sum of them is never a boxed number); the line height is for size 1.
 */
interface Font {
  /** Its name in every page's resources. */
  name: string;
  ref: Ref;
  lineHeight: number;
  /** The advance of each Windows-1252 code. */
  widths: Int32Array;
}

interface Fonts {
  regular: Font;
  bold: Font;
}

/** A font dictionary like the one pdfkit makes for the same standard font, with pdfkit's widths. */
function standardFont(doc: Doc, base: 'Helvetica' | 'Helvetica-Bold', name: string): Font {
  doc.font(base).fontSize(1000);
  const widths = new Int32Array(256);
  for (const [code, c] of WIN_ANSI_CHAR.entries()) {
    if (c !== undefined) widths[code] = Math.round(doc.widthOfString(c));
  }
  const ref = doc.ref({ Type: 'Font', Subtype: 'Type1', BaseFont: base, Encoding: 'WinAnsiEncoding' });
  ref.end(undefined); // written out at once: it never changes
  return { name, ref, lineHeight: doc.currentLineHeight(true) / 1000, widths };
}

const documentFonts = new WeakMap<Doc, Fonts>();
const fontsOf = (doc: Doc) => documentFonts.get(doc)!;

/** The width of `bytes` (Windows-1252), in thousandths of the size. */
function widthOf(font: Font, bytes: string): number {
  let width = 0;
  for (let index = 0; index < bytes.length; index++) width += font.widths[bytes.charCodeAt(index)]!;
  return width;
}

/** Larger than any width a cell could fit. */
const TOO_WIDE = 0x3fffffff;

/**
 * The width of `text` when the fonts show it as it is (as nearly every cell), else TOO_WIDE: one pass
 * over the text for the common case.
 */
function plainWidth(font: Font, text: string): number {
  let width = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || code > 0xff) return TOO_WIDE;
    width += font.widths[code]!;
  }
  return width;
}

/**
 * PDF syntax written byte by byte into a buffer that grows as needed and is reused page after page.
 * Built as strings, the cells of 100,000 rows made some 230 MB of short-lived strings: garbage that
 * made the collector run, and the heap grow, far more often.
 */
class Bytes {
  buffer: Buffer;
  length = 0;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  /** Room for `count` more bytes. */
  private reserve(count: number) {
    if (this.length + count <= this.buffer.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(2 * this.buffer.length, this.length + count));
    this.buffer.copy(bigger, 0, 0, this.length);
    this.buffer = bigger;
  }

  /** Operators and other ASCII text, as they are. */
  ascii(text: string) {
    this.reserve(text.length);
    const { buffer } = this;
    for (let index = 0; index < text.length; index++) buffer[this.length++] = text.charCodeAt(index);
  }

  /** A number given in hundredths, written with at most two decimals, then a blank. */
  number(value: Hundredths) {
    this.reserve(24);
    const { buffer } = this;
    let hundredths = value;
    if (hundredths < 0) {
      buffer[this.length++] = 0x2d; // -
      hundredths = -hundredths;
    }
    const whole = Math.floor(hundredths / 100);
    let digits = 1;
    for (let rest = whole; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    for (let rest = whole, at = this.length + digits - 1; at >= this.length; at--) {
      buffer[at] = 0x30 + (rest % 10);
      rest = Math.floor(rest / 10);
    }
    this.length += digits;
    const fraction = hundredths % 100;
    if (fraction !== 0) {
      buffer[this.length++] = 0x2e; // .
      buffer[this.length++] = 0x30 + Math.floor(fraction / 10);
      if (fraction % 10 !== 0) buffer[this.length++] = 0x30 + (fraction % 10);
    }
    buffer[this.length++] = 0x20;
  }

  /** A literal string of Windows-1252 bytes, backslashes and parentheses escaped. */
  string(bytes: string) {
    this.reserve(2 * bytes.length + 2);
    const { buffer } = this;
    buffer[this.length++] = 0x28; // (
    for (let index = 0; index < bytes.length; index++) {
      const code = bytes.charCodeAt(index);
      if (code === 0x28 || code === 0x29 || code === 0x5c) buffer[this.length++] = 0x5c;
      buffer[this.length++] = code;
    }
    buffer[this.length++] = 0x29; // )
  }

  append(other: Bytes) {
    this.reserve(other.length);
    other.buffer.copy(this.buffer, this.length, 0, other.length);
    this.length += other.length;
  }

  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}

const colours = new Map<string, string>();
/** `#rgb` or `#rrggbb` as the three operands of `rg` or `RG`, then a blank; the last few kept. */
function operands(colour: string): string {
  let found = colours.get(colour);
  if (found === undefined) {
    if (colours.size >= 64) colours.clear(); // accents are the workspaces' own
    found = `${rgb(colour)} `;
    colours.set(colour, found);
  }
  return found;
}

/**
 * Shapes and text for one page's content stream, in pdfkit's page coordinates (y grows downwards):
 * the shapes first, then the text in one text object, each line placed relative to the one before,
 * so a row of cells is mostly `146 0 Td (…) Tj`.
 */
class Content {
  private readonly shapes = new Bytes(16 * 1024);
  private readonly text = new Bytes(64 * 1024);
  private shapeColour = '';
  private textColour = '';
  private font: Font | null = null;
  private size = 0;
  private ascent: Hundredths = 0;
  /** Where the last line of text started. */
  private x: Hundredths = 0;
  private y: Hundredths = 0;

  /** Empties it for the next page. */
  reset() {
    this.shapes.length = 0;
    this.text.length = 0;
    this.shapeColour = '';
    this.textColour = '';
    this.font = null;
    this.size = 0;
    this.ascent = 0;
    this.x = 0;
    this.y = 0;
  }

  /** A filled rectangle; every position and size in hundredths of a point. */
  rect(colour: string, x: Hundredths, y: Hundredths, width: Hundredths, height: Hundredths) {
    const { shapes } = this;
    if (colour !== this.shapeColour) {
      shapes.ascii(`${operands(colour)}rg\n`);
      this.shapeColour = colour;
    }
    shapes.number(x);
    shapes.number(y);
    shapes.number(width);
    shapes.number(height);
    shapes.ascii('re f\n');
  }

  line(colour: string, x1: Hundredths, y1: Hundredths, x2: Hundredths, y2: Hundredths) {
    const { shapes } = this;
    shapes.ascii(`${operands(colour)}RG 1 w `);
    shapes.number(x1);
    shapes.number(y1);
    shapes.ascii('m ');
    shapes.number(x2);
    shapes.number(y2);
    shapes.ascii('l S\n');
  }

  /**
   * One line of `bytes` (Windows-1252) whose top is at `top`, as pdfkit's `text()` would place it:
   * the baseline an ascender below. The text matrix is flipped like the page, so a move down is a
   * negative y.
   */
  show(font: Font, size: number, colour: string, x: Hundredths, top: Hundredths, bytes: string) {
    if (bytes === '') return;
    const { text } = this;
    if (font !== this.font || size !== this.size) {
      text.ascii(`/${font.name} ${size} Tf\n`);
      this.font = font;
      this.size = size;
      this.ascent = hundredths(ASCENDER * size);
    }
    if (colour !== this.textColour) {
      text.ascii(`${operands(colour)}rg\n`);
      this.textColour = colour;
    }
    const baseline = top + this.ascent;
    text.number(x - this.x);
    text.number(this.y - baseline);
    text.ascii('Td ');
    text.string(bytes);
    text.ascii(' Tj\n');
    this.x = x;
    this.y = baseline;
  }

  private readonly whole = new Bytes(64 * 1024);

  /** The whole stream: valid until the content is reset. */
  bytes(): Buffer {
    const out = this.whole;
    out.length = 0;
    if (this.shapes.length > 0) {
      out.ascii('q\n');
      out.append(this.shapes);
      out.ascii('Q\n');
    }
    if (this.text.length > 0) {
      out.ascii('q BT 1 0 0 -1 0 0 Tm\n');
      out.append(this.text);
      out.ascii('ET Q\n');
    }
    return out.view();
  }
}

/** Adler-32 of `bytes`: the checksum at the end of a zlib stream. */
function adler32(bytes: Uint8Array): number {
  let a = 1;
  let b = 0;
  // 5552 bytes at most between the reductions, as zlib does: the sums stay exact integers.
  for (let start = 0; start < bytes.length; start += 5552) {
    const end = Math.min(start + 5552, bytes.length);
    for (let index = start; index < end; index++) {
      a += bytes[index]!;
      b += a;
    }
    a %= 65521;
    b %= 65521;
  }
  return b * 65536 + a;
}

/** A zlib header (deflate, 32 KiB window, fastest) and a last, empty, block. */
const ZLIB_HEADER = Buffer.from([0x78, 0x01]);
const LAST_BLOCK = Buffer.from([0x03, 0x00]);

/**
 * Compresses a document's page streams, one after the other, through one zlib stream at level 1 (in
 * Node's thread pool). Each page is a segment ended by a full flush, which needs nothing before it
 * to be read: with a header, a last empty block and its own checksum it is a zlib stream of its own,
 * as a PDF stream wants. `deflateSync` per page (as pdfkit does) makes a zlib object per page, which
 * lives on until a full collection; 3,300 of them made the heap grow by another 65 MiB.
 */
class Compressor {
  private readonly zlib: DeflateRaw;
  private queue: Promise<void> = Promise.resolve();
  /** Pages given and not yet written. */
  pending = 0;

  constructor(onError: (error: Error) => void) {
    // Every write ends with a full flush; the output is read in full after each, so the stream is
    // never held back for want of a reader.
    const options: ZlibOptions & { readableHighWaterMark: number } = {
      level: 1,
      flush: constants.Z_FULL_FLUSH,
      readableHighWaterMark: 1 << 30,
    };
    this.zlib = createDeflateRaw(options);
    this.zlib.on('error', onError);
  }

  /** Compresses `bytes` into the stream `ref` after those before; then calls `done`. */
  add(bytes: Buffer, ref: Ref, done: () => void) {
    this.pending += 1;
    this.queue = this.queue.then(
      () =>
        new Promise<void>((resolve) => {
          this.zlib.write(bytes, () => {
            // All the stream holds is this page's: the next page is written only after this.
            const segment = this.zlib.read() as Buffer | null;
            if (!this.zlib.destroyed) {
              const checksum = Buffer.alloc(4);
              checksum.writeUInt32BE(adler32(bytes));
              const parts = [ZLIB_HEADER, ...(segment ? [segment] : []), LAST_BLOCK, checksum];
              ref.end(Buffer.concat(parts));
            }
            this.pending -= 1;
            done();
            resolve();
          });
        }),
    );
  }

  /** Resolves once every page given so far is written. */
  idle(): Promise<void> {
    return this.queue;
  }

  close() {
    this.zlib.destroy();
  }
}

/** A document's own content streams: the current page's, and the compression of the others. */
interface PageStream {
  ref: Ref | null;
  content: Content;
  /** Contents whose pages are written, for the next pages. */
  free: Content[];
  compressor: Compressor;
  /** The current page's dictionary. */
  page: Ref | null;
}

const pageStreams = new WeakMap<Doc, PageStream>();
/** Where the tables draw on the current page. */
const pageContent = (doc: Doc) => pageStreams.get(doc)!.content;
/** Pages a document may have waiting for the compressor, each with its content (some 100 KiB). */
const MAX_WAITING = 4;

/**
 * Lets the compressor keep up with `doc`, at each new page. zlib hands back its work, and is given
 * the next page, only in a turn of the event loop: one turn here has the page before compressed in
 * the thread pool while this one is laid out. With MAX_WAITING pages waiting, it waits for them.
 */
async function compressorCaughtUp(doc: Doc) {
  const compressor = pageStreams.get(doc)?.compressor;
  if (!compressor || compressor.pending === 0) return;
  if (compressor.pending >= MAX_WAITING) await compressor.idle();
  else await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Starts the current page's own content stream, after pdfkit's (a page's streams are read as one, so
 * it draws in pdfkit's coordinates), compressed by the document's Compressor rather than by pdfkit,
 * which makes a zlib object per stream, at zlib's default level (three times as slow for a table's
 * text, and hardly smaller).
 */
function startPageStream(doc: Doc): Content {
  const ref = doc.ref({ Filter: 'FlateDecode' });
  const page = doc.page.dictionary.data as unknown as { Contents: Ref | Ref[] };
  page.Contents = [page.Contents, ref].flat();
  let stream = pageStreams.get(doc);
  if (!stream) {
    const compressor = new Compressor((error) => doc.destroy(error));
    doc.once('close', () => compressor.close());
    stream = { ref: null, content: new Content(), free: [], compressor, page: null };
    pageStreams.set(doc, stream);
  }
  if (stream.page) {
    // pdfkit has written the page before as this one started, and keeps its dictionary only for its
    // reference in the page tree ("12 0 R"). Its contents, a few objects per page, would stay until
    // the end of the document, and add to what each young-generation collection keeps.
    (stream.page as { data: object }).data = {};
  }
  stream.page = doc.page.dictionary;
  stream.ref = ref;
  stream.content = stream.free.pop() ?? new Content();
  stream.content.reset();
  return stream.content;
}

/**
 * Hands the page's own stream to the compressor. A stream may be written after its page: objects are
 * found through the cross-reference table, and pdfkit finishes the file once every one is written.
 */
function endPageStream(doc: Doc) {
  const stream = pageStreams.get(doc);
  if (!stream?.ref) return;
  const { content } = stream;
  stream.compressor.add(content.bytes(), stream.ref, () => stream.free.push(content));
  stream.ref = null;
}

/** Ends the document: the last page's stream, then pdfkit's end. */
function endDocument(doc: Doc) {
  endPageStream(doc);
  doc.end();
}

// ---------------------------------------------------------------------------------------------------

/**
 * A document whose every page gets the branded band and the footer with its number and the chain head.
 * `compress`: whether pdfkit compresses what it draws itself (see startPageStream): worth it for the
 * oversight report's charts and figures on a few pages, not for the flip of the coordinates that is
 * all it writes on most of the activity report's thousands.
 */
function startDocument(
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

// ---------------------------------------------------------------------------------------------------
// Tables.

/** After these a line may break; a blank is dropped at the break, the others stay at the line's end. */
const BREAKS = new Set([' ', '-', '/', '.', '_', ',', ';', ':']);

/**
 * `bytes` in lines no wider than `width` (thousandths of the size): broken after a blank, hyphen, slash, dot,
 * underscore or punctuation, and inside a run without any only where the run is wider than a line.
 * Every character is kept, in order, but the blanks at the breaks.
 */
function wrapLines(font: Font, bytes: string, width: number): string[] {
  // Runs: each ends after a break character and the blanks that follow it.
  const runs: string[] = [];
  let start = 0;
  for (let index = 0; index < bytes.length; index++) {
    if (BREAKS.has(bytes[index]!) && bytes[index + 1] !== ' ') {
      runs.push(bytes.slice(start, index + 1));
      start = index + 1;
    }
  }
  if (start < bytes.length) runs.push(bytes.slice(start));
  const lines: string[] = [];
  let line = '';
  for (const run of runs) {
    if (widthOf(font, (line + run).trimEnd()) <= width) {
      line += run;
    } else if (line !== '' && widthOf(font, run.trimEnd()) <= width) {
      lines.push(line.trimEnd());
      line = run;
    } else {
      // Wider than a line of its own: as much as fits on this line, then line after line.
      let rest = run;
      while (widthOf(font, (line + rest).trimEnd()) > width) {
        let room = width - widthOf(font, line);
        let fits = 0;
        while (fits < rest.length && (room -= font.widths[rest.charCodeAt(fits)]!) >= 0) fits++;
        if (fits === 0 && line === '') fits = 1; // a character wider than the column still moves on
        lines.push((line + rest.slice(0, fits)).trimEnd());
        line = '';
        rest = rest.slice(fits);
      }
      line += rest;
    }
  }
  if (line.trimEnd() !== '' || lines.length === 0) lines.push(line.trimEnd());
  return lines;
}

/** `bytes` cut to fit `width` (thousandths of the size) with an ellipsis: a header, or a column that never wraps. */
function cut(font: Font, bytes: string, width: number): string {
  let room = width - font.widths[ELLIPSIS.charCodeAt(0)]!;
  if (room < 0) return '';
  let end = 0;
  while (end < bytes.length && (room -= font.widths[bytes.charCodeAt(end)]!) >= 0) end++;
  return bytes.slice(0, end).trimEnd() + ELLIPSIS;
}

/** Wrapped values a table keeps per column, so a long name that recurs is wrapped once. */
const WRAPPED_KEPT = 500;

/** A cell's lines: the value itself when it fits, as nearly all do. */
type Lines = string | string[];

/** What a document is sent as (see Sent). */
const sentStreams = new WeakMap<Doc, Readable>();

/** Waits while more than MAX_BUFFERED of the document is unread, so a slow download holds it back. */
async function drained(doc: Doc) {
  const unread = () => doc.readableLength + (sentStreams.get(doc)?.readableLength ?? 0);
  while (unread() > MAX_BUFFERED && !doc.destroyed) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * A table whose header row repeats at the top of every page it runs onto, its rows read in batches
 * (the activity report's pages of holds) and turned into cells one at a time. A header's cells are
 * cut with an ellipsis when too wide; a body cell wraps where its column says so, else is cut too,
 * and its row grows to the tallest cell. Each page's part is one content stream.
 */
async function batchedTable<T>(
  doc: Doc,
  columns: Column[],
  batches: Iterable<readonly T[]> | AsyncIterable<readonly T[]>,
  cellsOf: (row: T) => readonly string[],
) {
  const { regular, bold } = fontsOf(doc);
  const width = columns.reduce((sum, column) => sum + column.width, 0);
  const wrapped = columns.map(() => new Map<string, string[]>());
  /** Each column's room for text in thousandths of the body size, and of the header size. */
  const rooms = (size: number) => columns.map((column) => Math.floor(((column.width - 4) * 1000) / size));
  const [bodyRooms, headRooms] = [rooms(BODY_SIZE), rooms(HEAD_SIZE)];
  const lay = (index: number, value: string, font: Font): Lines => {
    const column = columns[index]!;
    const room = (font === bold ? headRooms : bodyRooms)[index]!;
    if (plainWidth(font, value) <= room) return value;
    const bytes = winAnsi(value);
    if (widthOf(font, bytes) <= room) return bytes;
    if (font === bold || !column.wrap) return cut(font, bytes, room);
    const kept = wrapped[index]!;
    let lines = kept.get(value);
    if (!lines) {
      if (kept.size >= WRAPPED_KEPT) kept.clear();
      lines = wrapLines(font, bytes, room);
      kept.set(value, lines);
    }
    return lines;
  };
  // Plain loops and whole hundredths of a point: this runs for every cell of every row.
  const lefts = columns.map((_, index) =>
    hundredths(MARGIN + columns.slice(0, index).reduce((sum, c) => sum + c.width, 0)),
  );
  const place = (
    content: Content,
    font: Font,
    size: number,
    index: number,
    top: Hundredths,
    line: string,
  ) => {
    const column = columns[index]!;
    const left =
      column.align === 'right'
        ? lefts[index]! + (column.width - 2) * 100 - Math.round((size * widthOf(font, line)) / 10)
        : lefts[index]! + 200;
    content.show(font, size, INK, left, top + 350, line);
  };
  const draw = (content: Content, font: Font, size: number, top: Hundredths, cells: Lines[]) => {
    const leading = size * font.lineHeight;
    for (let index = 0; index < columns.length; index++) {
      const cell = cells[index]!;
      if (typeof cell === 'string') place(content, font, size, index, top, cell);
      else {
        for (let number = 0; number < cell.length; number++) {
          place(content, font, size, index, top + hundredths(number * leading), cell[number]!);
        }
      }
    }
  };
  const [left, right, row] = [MARGIN, MARGIN + width, ROW].map(hundredths) as [number, number, number];
  const titles = columns.map((column, index) => lay(index, column.title, bold));
  let content: Content;
  let y: Hundredths = 0;
  let bottom: Hundredths = 0;
  const header = () => {
    room(doc, 2 * ROW);
    y = hundredths(doc.y);
    bottom = hundredths(contentBottom(doc));
    content = pageContent(doc);
    content.rect(HEADER_FILL, left, y, right - left, row);
    draw(content, bold, HEAD_SIZE, y, titles);
    y += row;
  };
  header();
  const cells: Lines[] = new Array<Lines>(columns.length);
  let striped = false;
  for await (const batch of batches) {
    for (const item of batch) {
      const values = cellsOf(item);
      let lines = 1;
      for (let index = 0; index < columns.length; index++) {
        const cell = lay(index, values[index] ?? '', regular);
        cells[index] = cell;
        if (typeof cell !== 'string') lines = Math.max(lines, cell.length);
      }
      const height =
        lines === 1 ? row : Math.max(row, hundredths(lines * BODY_SIZE * regular.lineHeight + 7));
      if (y + height > bottom) {
        await compressorCaughtUp(doc);
        doc.addPage();
        header();
      }
      if ((striped = !striped)) content!.rect(STRIPE_FILL, left, y, right - left, height);
      draw(content!, regular, BODY_SIZE, y, cells);
      y += height;
    }
    await drained(doc);
    if (doc.destroyed) throw new Error('the report was abandoned'); // the download ended early
  }
  content!.line(RULE, left, y, right, y);
  doc.x = MARGIN;
  doc.y = y / 100;
  doc.font('Helvetica').fontSize(BODY_SIZE).moveDown(0.5); // half a body line, as before
}

/** A table of the rows at hand. */
const table = (doc: Doc, columns: Column[], rows: string[][]) =>
  batchedTable(doc, columns, [rows], (row) => row);

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

/**
 * The document as it is sent: pdfkit pushes every line of PDF syntax as a chunk of its own, some 40 a
 * page, which a response would write one by one (130,000 writes for 100,000 holds) and a slow reader
 * would leave piled up as as many small objects. They are taken as they come and sent in chunks of
 * CHUNK bytes; the document waits while MAX_BUFFERED of them are unread (see `drained`).
 */
class Sent extends Readable {
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

/** The oversight report: figures, charts and tables; small enough to be written in one go. */
export function oversightPdf(report: OversightReport): Readable {
  const doc = startDocument(report, 'Oversight report', 'portrait', true);
  void (async () => {
    filtersLine(doc, report);
    const { decidedBy, timeToDecision: time, expiry, fourEyes, followUps } = report;
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
      ['Reminders sent', String(followUps.reminders)],
      [
        'Holds escalated',
        `${followUps.holdsEscalated} (${followUps.escalations} step${followUps.escalations === 1 ? '' : 's'})`,
      ],
      ['Decisions by delegates', String(followUps.delegatedDecisions)],
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
        { title: 'Name', width: 110, wrap: true },
        { title: 'E-mail', width: 140, wrap: true },
        { title: 'Decisions', width: 50, align: 'right' },
        { title: 'Approvals', width: 50, align: 'right' },
        { title: 'Rejections', width: 50, align: 'right' },
        { title: 'As delegate', width: 55, align: 'right' },
        { title: 'Mean time', width: 60, align: 'right' },
      ],
      report.approvers.map((a) => [
        a.name,
        a.email,
        String(a.decisions),
        String(a.approvals),
        String(a.rejections),
        String(a.asDelegate),
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
    endDocument(doc);
  })().catch((error: unknown) => doc.destroy(error as Error));
  return new Sent(doc);
}

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
