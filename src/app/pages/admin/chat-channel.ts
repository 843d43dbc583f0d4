/**
 * A workspace's chat channel page (Slack's, Teams'): one setting, `<key>: { channel }` in the workspace
 * file, shown with the page's own words and saved through the same versioned apply as every admin form.
 */
import type { FastifyInstance } from 'fastify';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import { type Html, html } from '../../html.ts';
import { type Form, type PageDeps, sendPage } from '../../respond.ts';
import { issueSummary } from '../../views/form-fields.ts';
import { ADMIN, adminPage, applyChange, currentConfig, describeIssue, readAtOf } from './shared.ts';

type Ctx = PageDeps['ctx'];

export interface ChatChannel {
  key: 'slack' | 'teams';
  /** The page's title and its navigation entry: `Slack`. */
  title: string;
  /** The channel posted, and the change it makes. */
  parse: (form: Form | undefined) => { channel: string; change: WorkspaceConfig };
  /** What the channel is for, and whether this service can post to it. */
  about: (ctx: Ctx) => Html;
  form: (session: AppSession, version: number | undefined, channel: string, error?: string) => Html;
}

interface Shown {
  version: number | undefined;
  notice?: string | null;
  errors?: FieldErrors;
  problems?: string[];
}

const channelPage = (ctx: Ctx, session: AppSession, page: ChatChannel, channel: string, shown: Shown) =>
  adminPage(
    ctx,
    session,
    { title: page.title, active: page.key, notice: shown.notice },
    html`<h1>${page.title}</h1>
      ${page.about(ctx)} ${issueSummary(shown.problems ?? [])}
      ${page.form(session, shown.version, channel, shown.errors?.channel)}`,
  );

export function chatChannelPages(app: FastifyInstance, { ctx }: PageDeps, page: ChatChannel) {
  const path = `/app/admin/${page.key}`;
  const notices: Record<string, string> = { saved: `${page.title} channel saved.` };
  app.get(path, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = notices[takeNotice(request, reply)?.key ?? ''] ?? null;
    const config = await currentConfig(ctx, session);
    const channel = config[page.key]?.channel ?? '';
    return sendPage(
      reply,
      await channelPage(ctx, session, page, channel, { version: config.version, notice }),
    );
  });
  app.post<{ Body: Form }>(path, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const { channel, change } = page.parse(request.body);
    const version = readAtOf(request.body);
    const issues = await applyChange(ctx, session, version, () => change);
    if (!issues) return redirectWithNotice(reply, path, 'saved');
    const errors: FieldErrors = {};
    const problems = attachIssues(issues, page.key, errors).map((issue) => describeIssue(issue, change));
    const shown = { version, errors, problems };
    return sendPage(reply, await channelPage(ctx, session, page, channel, shown), 422);
  });
}
