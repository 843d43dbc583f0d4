/** Slack (`/app/admin/slack`): the channel this workspace's waiting holds are posted to (`slack: { channel }`). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import { parseSlackForm } from '../../forms/slack.ts';
import { html, when } from '../../html.ts';
import { type Form, type PageDeps, sendPage } from '../../respond.ts';
import { slackForm } from '../../views/slack.ts';
import { ADMIN, adminPage, applyChange, currentConfig, describeIssue, readAtOf } from './shared.ts';
import { issueSummary } from '../../views/form-fields.ts';

type Ctx = PageDeps['ctx'];

const NOTICES: Record<string, string> = { saved: 'Slack channel saved.' };

const slackPage = (
  ctx: Ctx,
  session: AppSession,
  channel: string,
  options: { version: number | undefined; notice?: string | null; errors?: FieldErrors; problems?: string[] },
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
      ${issueSummary(options.problems ?? [])}
      ${slackForm(session, options.version, channel, options.errors?.channel)}`,
  );

async function saveSlack(ctx: Ctx, request: FastifyRequest<{ Body: Form }>, reply: FastifyReply) {
  const session = request.appSession!;
  const { channel, change } = parseSlackForm(request.body);
  const version = readAtOf(request.body);
  const issues = await applyChange(ctx, session, version, () => change);
  if (issues) {
    const errors: FieldErrors = {};
    const problems = attachIssues(issues, 'slack', errors).map((issue) => describeIssue(issue, change));
    return sendPage(reply, await slackPage(ctx, session, channel, { version, errors, problems }), 422);
  }
  return redirectWithNotice(reply, '/app/admin/slack', 'saved');
}

export function slackPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/admin/slack', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    const { version, slack } = await currentConfig(ctx, session);
    return sendPage(reply, await slackPage(ctx, session, slack?.channel ?? '', { version, notice }));
  });
  app.post<{ Body: Form }>('/app/admin/slack', ADMIN, (request, reply) => saveSlack(ctx, request, reply));
}
