/** A value to copy (a key, a secret, a token, a link): on the page as text, with a copy button (copy.js). */
import { type Html, html } from './html.ts';

export const copyable = (id: string, value: string, what: string): Html =>
  html`<p class="secret" id="${id}">${value}</p>
    <p class="row">
      <button type="button" class="secondary" data-copy="${id}" hidden>Copy ${what}</button>
      <span class="muted" id="${id}-copied" role="status"></span>
    </p>`;
