/**
 * Writing text ourselves: the standard fonts' Windows-1252 encoding, their widths, and positions in
 * hundredths of a point.
 */
import type { Doc, Ref } from './style.ts';

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
export const printable = (text: string) => [...text].map((c) => (isPrintable(c) ? c : '?')).join('');

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
export const ELLIPSIS = String.fromCharCode(0x85);

/**
 * `text` in the standard fonts' encoding, one character per Windows-1252 byte, with "?" for what they
 * cannot show (as `printable`); written out as latin1, these are the bytes of a PDF string.
 */
export function winAnsi(text: string): string {
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
export type Hundredths = number;
export const hundredths = (points: number): Hundredths => Math.round(points * 100);
const round = (value: number) => Math.round(value * 100) / 100;

/** `#rgb` or `#rrggbb` as the three operands of `rg` or `RG`. */
export function rgb(hex: string): string {
  const long = hex.length === 4 ? `#${hex[1]}${hex[1]}${hex[2]}${hex[2]}${hex[3]}${hex[3]}` : hex;
  const channel = (at: number) => round(parseInt(long.slice(at, at + 2), 16) / 255);
  return `${channel(1)} ${channel(3)} ${channel(5)}`;
}

/**
 * Helvetica's ascender, regular and bold (their AFM): pdfkit places a line's baseline this share of
 * the size below its top.
 */
export const ASCENDER = 0.718;

/**
 * A standard font as this module writes it. Widths are in thousandths of the size (the fonts' own
 * units, whole numbers, so a sum of them is never a boxed number); the line height is for size 1.
 */
export interface Font {
  /** Its name in every page's resources. */
  name: string;
  ref: Ref;
  lineHeight: number;
  /** The advance of each Windows-1252 code. */
  widths: Int32Array;
}

export interface Fonts {
  regular: Font;
  bold: Font;
}

/** A font dictionary like the one pdfkit makes for the same standard font, with pdfkit's widths. */
export function standardFont(doc: Doc, base: 'Helvetica' | 'Helvetica-Bold', name: string): Font {
  doc.font(base).fontSize(1000);
  const widths = new Int32Array(256);
  for (const [code, c] of WIN_ANSI_CHAR.entries()) {
    if (c !== undefined) widths[code] = Math.round(doc.widthOfString(c));
  }
  const ref = doc.ref({ Type: 'Font', Subtype: 'Type1', BaseFont: base, Encoding: 'WinAnsiEncoding' });
  ref.end(undefined); // written out at once: it never changes
  return { name, ref, lineHeight: doc.currentLineHeight(true) / 1000, widths };
}

export const documentFonts = new WeakMap<Doc, Fonts>();
export const fontsOf = (doc: Doc) => documentFonts.get(doc)!;

/** The width of `bytes` (Windows-1252), in thousandths of the size. */
export function widthOf(font: Font, bytes: string): number {
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
export function plainWidth(font: Font, text: string): number {
  let width = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code < 0xa0) || code > 0xff) return TOO_WIDE;
    width += font.widths[code]!;
  }
  return width;
}
