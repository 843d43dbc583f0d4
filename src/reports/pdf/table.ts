/**
 * Tables written into the pages' own content streams: a header row that repeats on every page, and
 * cells that are cut, or wrapped where their column says so.
 */
import type { Content } from './content.ts';
import { contentBottom, drained, room } from './document.ts';
import { compressorCaughtUp, pageContent } from './page-streams.ts';
import {
  BODY_SIZE,
  type Column,
  type Doc,
  HEAD_SIZE,
  HEADER_FILL,
  INK,
  MARGIN,
  ROW,
  RULE,
  STRIPE_FILL,
} from './style.ts';
import {
  ELLIPSIS,
  type Font,
  fontsOf,
  type Hundredths,
  hundredths,
  plainWidth,
  widthOf,
  winAnsi,
} from './text.ts';

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

/**
 * How a table lays out a cell in its column: `bold` for the header row (always cut), the body font
 * otherwise (wrapped where the column says so, the wrapping of recurring values kept).
 */
function cellLayout(columns: Column[], bold: Font) {
  const wrapped = columns.map(() => new Map<string, string[]>());
  /** Each column's room for text in thousandths of the body size, and of the header size. */
  const rooms = (size: number) => columns.map((column) => Math.floor(((column.width - 4) * 1000) / size));
  const [bodyRooms, headRooms] = [rooms(BODY_SIZE), rooms(HEAD_SIZE)];
  return (index: number, value: string, font: Font): Lines => {
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
}

/** Draws a row's laid-out cells into a page's content, each in its column, aligned as it says. */
function cellPainter(columns: Column[]) {
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
  return (content: Content, font: Font, size: number, top: Hundredths, cells: Lines[]) => {
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
}

/**
 * A table whose header row repeats at the top of every page it runs onto, its rows read in batches
 * (the activity report's pages of holds) and turned into cells one at a time. A header's cells are
 * cut with an ellipsis when too wide; a body cell wraps where its column says so, else is cut too,
 * and its row grows to the tallest cell. Each page's part is one content stream.
 */
export async function batchedTable<T>(
  doc: Doc,
  columns: Column[],
  batches: Iterable<readonly T[]> | AsyncIterable<readonly T[]>,
  cellsOf: (row: T) => readonly string[],
) {
  const { regular, bold } = fontsOf(doc);
  const width = columns.reduce((sum, column) => sum + column.width, 0);
  const lay = cellLayout(columns, bold);
  const draw = cellPainter(columns);
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
export const table = (doc: Doc, columns: Column[], rows: string[][]) =>
  batchedTable(doc, columns, [rows], (row) => row);
