/**
 * HTML for the app: the escaping template of markup/html.ts (every interpolated value is escaped unless
 * it is already `Html`, so agent-supplied text can only ever appear as text) and the app's own pieces.
 */
import { utcText } from '../domain/time-text.ts';
import { type Html, html } from '../markup/html.ts';

export { Html, html, trusted } from '../markup/html.ts';

export const when = (condition: unknown, then: () => Html) => (condition ? then() : null);

const ISO = (ms: number) => new Date(ms).toISOString();

/**
 * A time, written in UTC and saying so; time.js (static) shows it in the reader's zone, named, with a
 * relative form: `23 Nov, 23:30 CET · 5 min ago`.
 */
export const time = (ms: number | null) =>
  ms === null ? html`—` : html`<time datetime="${ISO(ms)}">${utcText(ms)}</time>`;

/**
 * A deadline: time.js says how far it is, hours and minutes under two days and never more than there is
 * (`in 1 h 59 min (23:42 CET)`, in the page's zone; only `in 1 h 59 min` when `short`), and keeps it current.
 */
export const countdown = (ms: number | null, short = false) =>
  ms === null
    ? html`—`
    : html`<time class="countdown${short ? ' short' : ''}" datetime="${ISO(ms)}">${utcText(ms)}</time>`;

/** Pretty JSON inside <pre>: agent-supplied, so escaped like everything else. */
/** Scrollable, so focusable: keyboard users can scroll it too. */
export const json = (value: unknown) =>
  html`<pre class="json" tabindex="0">${JSON.stringify(value, null, 2)}</pre>`;
