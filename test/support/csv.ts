/** Reading the service's CSV reports in tests. */
import assert from 'node:assert/strict';

/** RFC 4180: quoted fields may hold commas, quotes (doubled) and line breaks; records end in CRLF. */
export function parseCsv(text: string): string[][] {
  assert.ok(text.endsWith('\r\n'), 'the file ends with CRLF');
  const rows: string[][] = [[]];
  const field = /"((?:[^"]|"")*)"|([^",\r\n]*)/y;
  let at = 0;
  for (;;) {
    field.lastIndex = at;
    const match = field.exec(text)!;
    rows.at(-1)!.push(match[1] !== undefined ? match[1].replaceAll('""', '"') : match[2]!);
    at = field.lastIndex;
    if (text[at] === ',') at += 1;
    else if (text.startsWith('\r\n', at)) {
      at += 2;
      if (at === text.length) return rows;
      rows.push([]);
    } else assert.fail(`unexpected character at ${at}`);
  }
}
