/**
 * An action as one line of text for a person: `send_invoice(amount=1200, to="acme")`.
 * Agent-supplied text can neither break the line nor pass for the message's own words: anything but a
 * plain name is quoted, and characters that break lines, hide or reorder text are shown escaped.
 * A summary too long for its place says what it left out and that it is not complete: a channel then
 * offers a link to the full decision page instead of a one-click decision (decisions.md, "No decision
 * on a summary").
 */

/** Controls (C0, C1), format characters (bidi overrides, zero widths) and line or paragraph separators. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

/** `\u2028`, or a surrogate pair for a character beyond the BMP, as JSON writes escapes. */
const escaped = (char: string) =>
  Array.from(
    { length: char.length },
    (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`,
  ).join('');

/** Text with every hidden character shown escaped (`\u202e`): a name reads as it is. */
export const showHidden = (text: string) => text.replace(HIDDEN, escaped);

/** A value as JSON on one line, with every hidden character escaped (still valid JSON). */
export const jsonLine = (value: unknown) => (JSON.stringify(value) ?? 'null').replace(HIDDEN, escaped);

/** A name (tool, agent, connection, argument key) as it is when plain, otherwise quoted and escaped. */
export const nameText = (name: string) => (/^[\w.:/@-]+$/.test(name) ? name : jsonLine(name));

export interface ActionSummary {
  text: string;
  /** Whether `text` shows every argument in full. */
  complete: boolean;
}

/** A value longer than this is cut when the whole action does not fit. */
const CUT = 40;
/** Room kept for `, +999 more fields`. */
const TAIL = 20;

const fieldText = ([key, value]: [string, unknown]) => `${nameText(key)}=${jsonLine(value)}`;

const fieldsOf = (args: Record<string, unknown>) => Object.entries(args).map(fieldText);

/** Text cut to `length` characters, the last one `…` when something was cut. */
export const cut = (text: string, length: number) =>
  text.length > length ? `${text.slice(0, length - 1)}…` : text;

/** As many fields as fit in `budget` characters, long values cut, and how many were left out. */
function fieldsWithin(fields: string[], budget: number): string {
  const shown: string[] = [];
  let length = 0;
  for (const field of fields) {
    const part = cut(field, CUT);
    if (length + part.length + 2 + TAIL > budget) break;
    shown.push(part);
    length += part.length + 2;
  }
  const left = fields.length - shown.length;
  if (left > 0) shown.push(`+${left} more field${left === 1 ? '' : 's'}`);
  return shown.join(', ');
}

/**
 * The action within `budget` characters: in full when it fits; otherwise long values are cut (`…`)
 * and the fields that no longer fit are counted (`+3 more fields`).
 */
export function summarizeAction(tool: string, args: Record<string, unknown>, budget: number): ActionSummary {
  const fields = fieldsOf(args);
  const full = `${nameText(tool)}(${fields.join(', ')})`;
  if (full.length <= budget) return { text: full, complete: true };
  const name = cut(nameText(tool), Math.floor(budget / 2));
  return { text: `${name}(${fieldsWithin(fields, budget - name.length - 2)})`, complete: false };
}

/** The arguments alone, as `summarizeAction` writes them inside the parentheses: `amount=1200, to="acme"`. */
export function summarizeArguments(args: Record<string, unknown>, budget: number): ActionSummary {
  return summarizeEntries(Object.entries(args), budget);
}

/** Arguments as `summarizeArguments` writes them, in the order of `entries` (an object cannot keep `"2"` after `"b"`). */
export function summarizeEntries(entries: [string, unknown][], budget: number): ActionSummary {
  const fields = entries.map(fieldText);
  const full = fields.join(', ');
  if (full.length <= budget) return { text: full, complete: true };
  return { text: fieldsWithin(fields, budget), complete: false };
}
