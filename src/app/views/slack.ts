/** The Slack page's form: the channel id. */
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html } from '../html.ts';
import { configFields, describedBy, fieldError } from './form-fields.ts';

export function slackForm(
  session: AppSession,
  version: number | undefined,
  channel: string,
  error: string | undefined,
): Html {
  return html`<form method="post" action="/app/admin/slack" class="decide card" style="margin-top:0">
    ${configFields(session, version)}
    <label for="s-channel">Channel id (empty for none)</label>
    <input
      id="s-channel"
      name="channel"
      type="text"
      maxlength="21"
      placeholder="C01ABCDEF"
      value="${channel}"
      ${describedBy('s-channel', error)}
    />
    ${fieldError('s-channel', error)}
    <p class="muted" style="margin:0">
      In Slack: the channel's name → <em>About</em> → the id at the bottom (<code>C…</code>). Invite the app
      to the channel (<code>/invite @YourApp</code>).
    </p>
    <div class="buttons"><button type="submit">Save</button></div>
  </form>`;
}
