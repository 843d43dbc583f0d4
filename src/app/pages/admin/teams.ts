/** Teams (`/app/admin/teams`): the channel this workspace's waiting holds are posted to (`teams: { channel }`). */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import { parseTeamsForm } from '../../forms/teams.ts';
import { html, when } from '../../html.ts';
import { type Form, type PageDeps, sendPage } from '../../respond.ts';
import { issueSummary } from '../../views/form-fields.ts';
import { teamsForm } from '../../views/teams.ts';
import { ADMIN, adminPage, applyChange, currentConfig, describeIssue, readAtOf } from './shared.ts';

type Ctx = PageDeps['ctx'];

const NOTICES: Record<string, string> = { saved: 'Teams channel saved.' };

const teamsPage = (
  ctx: Ctx,
  session: AppSession,
  channel: string,
  options: { version: number | undefined; notice?: string | null; errors?: FieldErrors; problems?: string[] },
) =>
  adminPage(
    ctx,
    session,
    { title: 'Teams', active: 'teams', notice: options.notice },
    html`<h1>Teams</h1>
      <p>
        Every hold of this workspace that waits for people is posted to this Microsoft Teams channel as well,
        as a card with its buttons; any approver of the hold can decide there, as the member their Teams user
        is set for. Approvers get their own cards in their chats with the bot either way.
      </p>
      ${when(
        !ctx.channels.teams,
        () =>
          html`<p class="notice" role="status">
            Teams is not set up for this service (<code>TEAMS_APP_ID</code>, <code>TEAMS_APP_PASSWORD</code>,
            <code>TEAMS_TENANT_ID</code>): the channel is kept, but nothing is posted.
          </p>`,
      )}
      ${issueSummary(options.problems ?? [])}
      ${teamsForm(session, options.version, channel, options.errors?.channel)}`,
  );

async function saveTeams(ctx: Ctx, request: FastifyRequest<{ Body: Form }>, reply: FastifyReply) {
  const session = request.appSession!;
  const { channel, change } = parseTeamsForm(request.body);
  const version = readAtOf(request.body);
  const issues = await applyChange(ctx, session, version, () => change);
  if (issues) {
    const errors: FieldErrors = {};
    const problems = attachIssues(issues, 'teams', errors).map((issue) => describeIssue(issue, change));
    return sendPage(reply, await teamsPage(ctx, session, channel, { version, errors, problems }), 422);
  }
  return redirectWithNotice(reply, '/app/admin/teams', 'saved');
}

export function teamsPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/admin/teams', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    const { version, teams } = await currentConfig(ctx, session);
    return sendPage(reply, await teamsPage(ctx, session, teams?.channel ?? '', { version, notice }));
  });
  app.post<{ Body: Form }>('/app/admin/teams', ADMIN, (request, reply) => saveTeams(ctx, request, reply));
}
