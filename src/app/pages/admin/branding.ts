/** Branding: the workspace's name, logo and accent colour, with a preview before saving. */
import type { FastifyInstance } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { type Html, html, when } from '../../html.ts';
import { field, type Form, type PageDeps, sendPage } from '../../respond.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checkConfig,
  configFields,
  currentConfig,
  describedBy,
  describeIssue,
  fieldError,
  issueSummary,
  readAtOf,
} from './shared.ts';

const HEX = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;
const DEFAULT_ACCENT = '#0a6e5c';

interface BrandingValues {
  name: string;
  logo_url: string;
  accent_color: string;
}

/** `<input type="color">` needs #rrggbb. */
const sixDigits = (hex: string) =>
  hex.length === 4 ? `#${[...hex.slice(1)].map((c) => c + c).join('')}`.toLowerCase() : hex.toLowerCase();

function preview(values: BrandingValues): Html {
  // Only a checked colour and an https URL ever reach the style and the image.
  const accent = HEX.test(values.accent_color) ? values.accent_color : DEFAULT_ACCENT;
  const logo = /^https:\/\/[^\s"'<>]+$/.test(values.logo_url) ? values.logo_url : null;
  return html`<section class="card" aria-labelledby="preview-title">
    <h2 id="preview-title">Preview</h2>
    <div style="border:1px solid var(--line);border-radius:8px;overflow:hidden">
      <div class="brand" style="padding:0.6rem 1rem;background:#fff;border-bottom:4px solid ${accent}">
        ${when(logo, () => html`<img src="${logo}" alt="" />`)}
        <span>${values.name || 'Workspace'}</span>
      </div>
      <div style="padding:1rem;--accent:${accent}">
        <p style="margin-top:0">Links <a href="#preview-title">look like this</a>.</p>
        <span class="badge" style="background:${accent}">3</span>
        <button type="button" style="background:${accent};border-color:${accent}">A button</button>
      </div>
    </div>
    <p class="muted">Shown in the app's header, on status pages and in reports.</p>
  </section>`;
}

function brandingForm(
  session: AppSession,
  version: number | undefined,
  values: BrandingValues,
  saved: BrandingValues,
  errors: Record<string, string>,
): Html {
  const picker = HEX.test(values.accent_color) ? sixDigits(values.accent_color) : DEFAULT_ACCENT;
  return html`<form method="post" action="/app/admin/branding" class="decide card" style="margin-top:0">
    ${configFields(session, version)}
    <label for="b-name">Workspace name</label>
    <input
      id="b-name"
      name="name"
      type="text"
      required
      maxlength="200"
      value="${values.name}"
      ${describedBy('b-name', errors.name)}
    />
    ${fieldError('b-name', errors.name)}
    <label for="b-logo">Logo URL (https; empty for none)</label>
    <input
      id="b-logo"
      name="logo_url"
      type="url"
      maxlength="2000"
      placeholder="https://…"
      value="${values.logo_url}"
      ${describedBy('b-logo', errors.logo_url)}
    />
    ${fieldError('b-logo', errors.logo_url)}
    <label for="b-accent">Accent colour</label>
    <div class="row">
      <input
        id="b-accent-picker"
        name="accent_picker"
        type="color"
        value="${picker}"
        aria-label="Accent colour picker"
        style="width:3rem;height:2.5rem;padding:0;border:1px solid #9aa4ae;border-radius:6px"
      />
      <input
        id="b-accent"
        name="accent_color"
        type="text"
        maxlength="7"
        placeholder="#0a6e5c"
        value="${values.accent_color}"
        style="max-width:10rem"
        ${describedBy('b-accent', errors.accent_color)}
      />
    </div>
    <p class="muted" style="margin:0">
      Pick a colour or type <code>#rgb</code> / <code>#rrggbb</code>; the typed value wins when you change it.
      Empty: the default colour.
    </p>
    ${fieldError('b-accent', errors.accent_color)}
    <input type="hidden" name="accent_was" value="${saved.accent_color}" />
    <input type="hidden" name="picker_was" value="${picker}" />
    <div class="buttons">
      <button type="submit" name="action" value="preview" class="secondary">Preview</button>
      <button type="submit" name="action" value="save">Save</button>
    </div>
  </form>`;
}

export function brandingPages(app: FastifyInstance, { ctx }: PageDeps) {
  /** What is saved now, and the version it was read at (read first: see `currentConfig`). */
  const saved = async (session: AppSession) => {
    const config = await currentConfig(ctx, session);
    const values: BrandingValues = {
      name: config.name ?? session.workspace.name,
      logo_url: config.branding?.logo_url ?? '',
      accent_color: config.branding?.accent_color ?? '',
    };
    return { values, version: config.version };
  };

  const page = async (
    session: AppSession,
    values: BrandingValues,
    options: {
      version: number | undefined;
      notice?: string | null;
      errors?: Record<string, string>;
      problems?: string[];
    },
  ) =>
    adminPage(
      ctx,
      session,
      { title: 'Branding', active: 'branding', notice: options.notice },
      html`<h1>Branding</h1>
        ${issueSummary(options.problems ?? [])}
        <div class="filters" style="align-items:start">
          <div style="min-width:min(22rem,100%)">
            ${brandingForm(session, options.version, values, (await saved(session)).values, options.errors ?? {})}
          </div>
          <div style="min-width:min(22rem,100%)">${preview(values)}</div>
        </div>`,
    );

  app.get<{ Querystring: { notice?: string } }>('/app/admin/branding', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const notice = request.query.notice === 'saved' ? 'Branding saved.' : null;
    const { values, version } = await saved(session);
    return sendPage(reply, await page(session, values, { version, notice }));
  });

  app.post<{ Body: Form }>('/app/admin/branding', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const body = request.body;
    const typed = field(body, 'accent_color');
    const picked = field(body, 'accent_picker');
    // Two inputs for one colour: a changed text field wins, else a changed picker, else the text.
    const accent =
      typed !== field(body, 'accent_was') || !HEX.test(picked) || picked === field(body, 'picker_was')
        ? typed
        : picked;
    const values: BrandingValues = {
      name: field(body, 'name'),
      logo_url: field(body, 'logo_url'),
      accent_color: accent,
    };
    const config = {
      name: values.name,
      branding: { logo_url: values.logo_url || null, accent_color: values.accent_color || null },
    };
    const save = field(body, 'action') !== 'preview';
    const version = readAtOf(body);
    const issues = save
      ? await applyChange(ctx, session, version, () => config)
      : (() => {
          const checked = checkConfig(config);
          return 'issues' in checked ? checked.issues : null;
        })();
    if (issues) {
      const errors: Record<string, string> = {};
      const problems: string[] = [];
      for (const issue of issues) {
        const key = issue.field === 'name' ? 'name' : issue.field.replace(/^branding\./, '');
        if (['name', 'logo_url', 'accent_color'].includes(key) && !errors[key]) errors[key] = issue.message;
        else problems.push(describeIssue(issue, config));
      }
      return sendPage(reply, await page(session, values, { version, errors, problems }), 422);
    }
    if (!save) {
      return sendPage(
        reply,
        await page(session, values, {
          version,
          notice: 'This is a preview: nothing is saved until you press Save.',
        }),
      );
    }
    return reply.redirect('/app/admin/branding?notice=saved', 303);
  });
}
