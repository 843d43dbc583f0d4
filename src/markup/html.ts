/**
 * Escaping HTML: a tagged template that escapes every interpolated value unless it is already `Html`,
 * so agent-supplied text can only ever appear as text. The app, the server-rendered pages and the
 * e-mails (channels/messages.ts) all write HTML with it.
 */

/** Escapes text for HTML: agent-supplied values are always shown as text. */
export function escapeHtml(value: unknown): string {
  return String(value).replace(
    /[&<>"']/g,
    (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[char]!,
  );
}

export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString() {
    return this.value;
  }
}

function render(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(value);
}

export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  values.forEach((value, index) => {
    out += render(value) + strings[index + 1]!;
  });
  return new Html(out);
}

/** Trusted markup only (never anything that came from a request or an agent). */
export const trusted = (markup: string) => new Html(markup);
