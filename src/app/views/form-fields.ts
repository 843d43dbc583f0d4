/** The parts of the app's forms: hidden fields, labelled inputs with their errors, a confirmation step. */
import type { WorkspaceConfig } from '../../services/config-file.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, when } from '../html.ts';

/** The configuration as an admin page shows it, with the version its forms carry. */
export type VersionedConfig = WorkspaceConfig & { version: number };

export const csrfField = (session: AppSession) =>
  html`<input type="hidden" name="_csrf" value="${session.csrfToken}" />`;

/** The fields of a form that changes the configuration: the CSRF token and the version it was read at. */
export const configFields = (session: AppSession, version: number | undefined) =>
  html`${csrfField(session)}${when(
    version !== undefined,
    () => html`<input type="hidden" name="config_version" value="${String(version)}" />`,
  )}`;

/** The problems that stopped a change, at the top of a page; it takes the focus, so it is read first. */
export const issueSummary = (messages: (string | Html)[]) =>
  when(
    messages.length > 0,
    () =>
      html`<div class="error" role="alert" id="problems" tabindex="-1" autofocus>
        <p><strong>Nothing was changed.</strong> ${messages.length === 1 ? 'One problem:' : 'Problems:'}</p>
        <ul>
          ${messages.map((message) => html`<li>${message}</li>`)}
        </ul>
      </div>`,
  );

/** A field's own error, next to it; `describedBy` ties it to the input for screen readers. */
export const fieldError = (id: string, message: string | undefined) =>
  when(message, () => html`<p class="error" id="${id}-error">${message}</p>`);

export const describedBy = (id: string, message: string | undefined) =>
  message ? html` aria-invalid="true" aria-describedby="${id}-error"` : null;

/** A labelled input with its own error; `extra` holds its other attributes (`required`, limits). */
export const inputField = (field: {
  id: string;
  name: string;
  label: Html | string;
  type: string;
  value: string;
  error: string | undefined;
  extra?: Html | null;
}) =>
  html`<label for="${field.id}">${field.label}</label>
    <input
      id="${field.id}"
      name="${field.name}"
      type="${field.type}"
      value="${field.value}"
      ${field.extra ?? null}
      ${describedBy(field.id, field.error)}
    />
    ${fieldError(field.id, field.error)}`;

export const selected = (yes: boolean) => (yes ? html` selected` : null);
export const checked = (yes: boolean) => (yes ? html` checked` : null);

/** The second step of a destructive action: the same form again, with `confirm=yes`. */
export function confirmCard(
  session: AppSession,
  options: {
    title: string;
    message: Html | string;
    action: string;
    fields: Record<string, string>;
    button: string;
    back: string;
  },
): Html {
  return html`<div class="narrow card">
    <h1>${options.title}</h1>
    <p>${options.message}</p>
    <form method="post" action="${options.action}" class="decide">
      ${csrfField(session)}
      ${Object.entries(options.fields).map(
        ([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`,
      )}
      <input type="hidden" name="confirm" value="yes" />
      <div class="buttons">
        <button type="submit" class="reject">${options.button}</button>
        <a class="button secondary" href="${options.back}">Cancel</a>
      </div>
    </form>
  </div>`;
}
