/** Branding (`/app/admin/branding`): the workspace's name, logo and accent colour, with a preview before saving. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachBrandingIssues, type BrandingValues, parseBrandingForm } from '../../forms/branding.ts';
import type { FieldErrors } from '../../forms/form.ts';
import { html } from '../../html.ts';
import { type Form, type PageDeps, sendPage } from '../../respond.ts';
import { brandingForm, preview } from '../../views/branding.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checkConfig,
  currentConfig,
  describeIssue,
  readAtOf,
} from './shared.ts';
import { issueSummary } from '../../views/form-fields.ts';

type Ctx = PageDeps['ctx'];

const NOTICES: Record<string, string> = { saved: 'Branding saved.' };

/** What is saved now, and the version it was read at (read first: see `currentConfig`). */
async function saved(ctx: Ctx, session: AppSession) {
  const config = await currentConfig(ctx, session);
  const values: BrandingValues = {
    name: config.name ?? session.workspace.name,
    logo_url: config.branding?.logo_url ?? '',
    accent_color: config.branding?.accent_color ?? '',
  };
  return { values, version: config.version };
}

async function brandingPage(
  ctx: Ctx,
  session: AppSession,
  values: BrandingValues,
  options: { version: number | undefined; notice?: string | null; errors?: FieldErrors; problems?: string[] },
) {
  const form = brandingForm(
    session,
    options.version,
    values,
    (await saved(ctx, session)).values,
    options.errors ?? {},
  );
  return adminPage(
    ctx,
    session,
    { title: 'Branding', active: 'branding', notice: options.notice },
    html`<h1>Branding</h1>
      ${issueSummary(options.problems ?? [])}
      <div class="filters" style="align-items:start">
        <div style="min-width:min(22rem,100%)">${form}</div>
        <div style="min-width:min(22rem,100%)">${preview(values)}</div>
      </div>`,
  );
}

const issuesOf = (checked: ReturnType<typeof checkConfig>) => ('issues' in checked ? checked.issues : null);

/** Saves the branding posted, or only checks it for a preview. */
async function saveBranding(ctx: Ctx, request: FastifyRequest<{ Body: Form }>, reply: FastifyReply) {
  const session = request.appSession!;
  const { values, preview, change } = parseBrandingForm(request.body);
  const version = readAtOf(request.body);
  const issues = preview
    ? issuesOf(checkConfig(change))
    : await applyChange(ctx, session, version, () => change);
  if (issues) {
    const errors: FieldErrors = {};
    const problems = attachBrandingIssues(issues, errors).map((issue) => describeIssue(issue, change));
    return sendPage(reply, await brandingPage(ctx, session, values, { version, errors, problems }), 422);
  }
  if (!preview) return redirectWithNotice(reply, '/app/admin/branding', 'saved');
  const notice = 'This is a preview: nothing is saved until you press Save.';
  return sendPage(reply, await brandingPage(ctx, session, values, { version, notice }));
}

export function brandingPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/admin/branding', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    const { values, version } = await saved(ctx, session);
    return sendPage(reply, await brandingPage(ctx, session, values, { version, notice }));
  });
  app.post<{ Body: Form }>('/app/admin/branding', ADMIN, (request, reply) =>
    saveBranding(ctx, request, reply),
  );
}
