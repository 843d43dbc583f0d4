/** The Branding page's views: the form, and a preview of the header and colours it makes. */
import type { AppSession } from '../../services/sign-in.ts';
import { type BrandingValues, HEX_COLOUR } from '../forms/branding.ts';
import type { FieldErrors } from '../forms/form.ts';
import { type Html, html, when } from '../html.ts';
import { configFields, describedBy, fieldError } from './form-fields.ts';

const DEFAULT_ACCENT = '#0a6e5c';

/** `<input type="color">` needs #rrggbb. */
const sixDigits = (hex: string) =>
  hex.length === 4 ? `#${[...hex.slice(1)].map((c) => c + c).join('')}`.toLowerCase() : hex.toLowerCase();

export function preview(values: BrandingValues): Html {
  // Only a checked colour and an https URL ever reach the style and the image.
  const accent = HEX_COLOUR.test(values.accent_color) ? values.accent_color : DEFAULT_ACCENT;
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

export function brandingForm(
  session: AppSession,
  version: number | undefined,
  values: BrandingValues,
  saved: BrandingValues,
  errors: FieldErrors,
): Html {
  const picker = HEX_COLOUR.test(values.accent_color) ? sixDigits(values.accent_color) : DEFAULT_ACCENT;
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
