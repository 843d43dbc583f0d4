/** A page's content stream written byte by byte: filled rectangles, lines and lines of text. */
import { ASCENDER, type Font, type Hundredths, hundredths, rgb } from './text.ts';

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
export class Content {
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
