/** The inbox's keyboard: the list of keys, the dialog that confirms a decision made with them, what they did. */
import { html } from '../html.ts';

/**
 * The keyboard's keys, opened with `?` or the "Keyboard" button (app.js), with the switch that turns
 * them off (WCAG 2.1.4); the confirmation of a decision made with them; and the live region that says
 * what a key did.
 */
export const keysDialog = () =>
  html`<dialog id="keys" aria-labelledby="keys-title">
      <h2 id="keys-title">Keyboard</h2>
      <p>Keys act on the focused line, or on the open hold when no line has the focus.</p>
      <dl class="keys">
        <dt><kbd>j</kbd> / <kbd>k</kbd></dt>
        <dd>next / previous hold (on past the page's ends)</dd>
        <dt><kbd>Enter</kbd></dt>
        <dd>open the hold</dd>
        <dt><kbd>a</kbd></dt>
        <dd>approve the hold (asks first)</dd>
        <dt><kbd>r</kbd></dt>
        <dd>reject the hold (asks first)</dd>
        <dt><kbd>c</kbd></dt>
        <dd>write a comment</dd>
        <dt><kbd>m</kbd></dt>
        <dd>I'm on it: mark the hold as yours</dd>
        <dt><kbd>x</kbd></dt>
        <dd>select the hold for a bulk decision (shift-click selects a range)</dd>
        <dt><kbd>/</kbd></dt>
        <dd>search</dd>
        <dt><kbd>?</kbd></dt>
        <dd>this list</dd>
      </dl>
      <label class="shortcuts"><input type="checkbox" id="shortcuts" checked /> Keyboard shortcuts on</label>
      <form method="dialog"><button type="submit">Close</button></form>
    </dialog>
    <dialog id="confirm" aria-labelledby="confirm-title">
      <form method="dialog">
        <h2 id="confirm-title"></h2>
        <p class="confirm-action"><code></code></p>
        <p class="muted confirm-agent"></p>
        <div class="buttons">
          <button type="submit" value="yes" class="confirm-yes"></button>
          <button type="submit" value="no" class="secondary">Cancel</button>
        </div>
      </form>
    </dialog>
    <p id="key-status" class="key-status" role="status"></p>`;
