/** Charts and figures, drawn by pdfkit: the oversight report's. */
import { contentWidth, room } from './document.ts';
import { type Doc, INK, MARGIN, MUTED, RULE } from './style.ts';

/** Horizontal bars, one per label, scaled to the largest. */
export function barChart(doc: Doc, bars: { label: string; value: number; colour: string }[]) {
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
export function columnChart(doc: Doc, columns: { label: string; value: number }[], colour: string) {
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
export function figures(doc: Doc, pairs: [string, string][]) {
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
