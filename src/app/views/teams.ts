/** The Teams page's form: the channel id. */
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html } from '../html.ts';
import { configFields, inputField } from './form-fields.ts';

export function teamsForm(
  session: AppSession,
  version: number | undefined,
  channel: string,
  error: string | undefined,
): Html {
  return html`<form method="post" action="/app/admin/teams" class="decide card" style="margin-top:0">
    ${configFields(session, version)}
    ${inputField({
      id: 't-channel',
      name: 'channel',
      label: 'Channel id (empty for none)',
      type: 'text',
      value: channel,
      error,
      extra: html`maxlength="230" placeholder="19:…@thread.tacv2" spellcheck="false" autocomplete="off"`,
    })}
    <p class="muted" style="margin:0">
      In Teams: the channel's <em>⋯</em> → <em>Get link to channel</em>; the id is the part of the link after
      <code>/channel/</code> (<code>19:…@thread.tacv2</code>, encoded or not). Add the bot's app to the team
      (the team's <em>⋯</em> → <em>Manage team</em> → <em>Apps</em>).
    </p>
    <div class="buttons"><button type="submit">Save</button></div>
  </form>`;
}
