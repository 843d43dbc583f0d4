/**
 * HTML for the app, built with a tagged template that escapes every interpolated value unless it
 * is already `Html`. Agent-supplied text can therefore only ever appear as text.
 */
import { utcText } from '../domain/time-text.ts';
import { escapeHtml } from '../services/escape.ts';

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

export const when = (condition: unknown, then: () => Html) => (condition ? then() : null);

const ISO = (ms: number) => new Date(ms).toISOString();

/**
 * A time, written in UTC and saying so; time.js (static) shows it in the reader's zone, named, with a
 * relative form: `23 Nov, 23:30 CET · 5 min ago`.
 */
export const time = (ms: number | null) =>
  ms === null ? html`—` : html`<time datetime="${ISO(ms)}">${utcText(ms)}</time>`;

/** A deadline: time.js says how far it is (`in 12 min (23:42 CET)`, or only `in 12 min` when `short`) and keeps it current. */
export const countdown = (ms: number | null, short = false) =>
  ms === null
    ? html`—`
    : html`<time class="countdown${short ? ' short' : ''}" datetime="${ISO(ms)}">${utcText(ms)}</time>`;

/** Pretty JSON inside <pre>: agent-supplied, so escaped like everything else. */
/** Scrollable, so focusable: keyboard users can scroll it too. */
export const json = (value: unknown) =>
  html`<pre class="json" tabindex="0">${JSON.stringify(value, null, 2)}</pre>`;
