/** Slack (`/app/admin/slack`): the channel this workspace's waiting holds are posted to (`slack: { channel }`). */
import type { FastifyInstance } from 'fastify';
import { parseSlackForm } from '../../forms/slack.ts';
import { html, when } from '../../html.ts';
import type { PageDeps } from '../../respond.ts';
import { slackForm } from '../../views/slack.ts';
import { chatChannelPages } from './chat-channel.ts';

export function slackPages(app: FastifyInstance, deps: PageDeps) {
  chatChannelPages(app, deps, {
    key: 'slack',
    title: 'Slack',
    parse: parseSlackForm,
    about: (ctx) =>
      html`<p>
          Every hold of this workspace that waits for people is posted to this channel as well, with its
          buttons; any approver of the hold can decide there. Approvers get their own direct messages either
          way.
        </p>
        ${when(
          !ctx.channels.slack,
          () =>
            html`<p class="notice" role="status">
              Slack is not set up for this service (<code>SLACK_BOT_TOKEN</code>,
              <code>SLACK_SIGNING_SECRET</code>): the channel is kept, but nothing is posted.
            </p>`,
        )}`,
    form: slackForm,
  });
}
