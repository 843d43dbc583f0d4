/** The inbox's keyboard: the list of keys and the dialog that confirms a decision made with them. */
import { html } from '../html.ts';

/** The keyboard's keys, opened with `?` (app.js), and the confirmation of a decision made with them. */
export const keysDialog = () =>
  html`<dialog id="keys" aria-labelledby="keys-title">
      <h2 id="keys-title">Keyboard</h2>
      <dl class="keys">
        <dt><kbd>j</kbd> / <kbd>k</kbd></dt>
        <dd>next / previous hold</dd>
        <dt><kbd>Enter</kbd></dt>
        <dd>open the hold</dd>
        <dt><kbd>a</kbd></dt>
        <dd>approve the open hold (asks first)</dd>
        <dt><kbd>r</kbd></dt>
        <dd>reject the open hold (asks first)</dd>
        <dt><kbd>c</kbd></dt>
        <dd>write a comment</dd>
        <dt><kbd>?</kbd></dt>
        <dd>this list</dd>
      </dl>
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
    </dialog>`;
