/** A part of a page that a phone folds away behind its summary; a wider screen always shows it (app.css). */
import { type Html, html } from '../html.ts';

/** Open from the start when `open` (e.g. filters in use), so what applies is never hidden. */
export const foldOnPhone = (summary: string, open: boolean, body: Html) =>
  html`<details class="fold" ${open ? html`open` : null}>
    <summary>${summary}</summary>
    ${body}
  </details>`;
