/** Teams (`/app/admin/teams`): the channel this workspace's waiting holds are posted to (`teams: { channel }`). */
import type { FastifyInstance } from 'fastify';
import { parseTeamsForm } from '../../forms/teams.ts';
import { html, when } from '../../html.ts';
import type { PageDeps } from '../../respond.ts';
import { teamsForm } from '../../views/teams.ts';
import { chatChannelPages } from './chat-channel.ts';

export function teamsPages(app: FastifyInstance, deps: PageDeps) {
  chatChannelPages(app, deps, {
    key: 'teams',
    title: 'Teams',
    parse: parseTeamsForm,
    about: (ctx) =>
      html`<p>
          Every hold of this workspace that waits for people is posted to this Microsoft Teams channel as
          well, as a card with its buttons; any approver of the hold can decide there, as the member their
          Teams user is set for. Approvers get their own cards in their chats with the bot either way.
        </p>
        ${when(
          !ctx.channels.teams,
          () =>
            html`<p class="notice" role="status">
              Teams is not set up for this service (<code>TEAMS_APP_ID</code>,
              <code>TEAMS_APP_PASSWORD</code>, <code>TEAMS_TENANT_ID</code>): the channel is kept, but nothing
              is posted.
            </p>`,
        )}`,
    form: teamsForm,
  });
}
