/** Slack: the channel this workspace's waiting holds are posted to (`slack: { channel }`). */
import type { FastifyInstance } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { type Html, html, when } from '../../html.ts';
import { field, type Form, type PageDeps, sendPage } from '../../respond.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  configFields,
  currentConfig,
  describedBy,
  describeIssue,
  fieldError,
  issueSummary,
  readAtOf,
} from './shared.ts';

function slackForm(
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

export function slackPages(app: FastifyInstance, { ctx }: PageDeps) {
  const page = (
    session: AppSession,
    channel: string,
    options: { version: number | undefined; notice?: string | null; error?: string; problems?: string[] },
  ) =>
    adminPage(
      ctx,
      session,
      { title: 'Slack', active: 'slack', notice: options.notice },
      html`<h1>Slack</h1>
        <p>
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
        )}
        ${issueSummary(options.problems ?? [])} ${slackForm(session, options.version, channel, options.error)}`,
    );

  app.get<{ Querystring: { notice?: string } }>('/app/admin/slack', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = request.query.notice === 'saved' ? 'Slack channel saved.' : null;
    const { version, slack } = await currentConfig(ctx, session);
    return sendPage(reply, await page(session, slack?.channel ?? '', { version, notice }));
  });

  app.post<{ Body: Form }>('/app/admin/slack', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const channel = field(request.body, 'channel').trim();
    const config = { slack: channel ? { channel } : null };
    const version = readAtOf(request.body);
    const issues = await applyChange(ctx, session, version, () => config);
    if (issues) {
      const own = issues.find((issue) => issue.field === 'slack.channel');
      const problems = issues.filter((issue) => issue !== own).map((issue) => describeIssue(issue, config));
      return sendPage(reply, await page(session, channel, { version, error: own?.message, problems }), 422);
    }
    return reply.redirect('/app/admin/slack?notice=saved', 303);
  });
}
