/** The sign-in page of the admin pages: the workspace's identity provider (OpenID Connect). */
import type { SignInValues } from '../forms/sign-in.ts';
import type { FieldErrors } from '../forms/form.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, when } from '../html.ts';
import { checked, configFields, csrfField, describedBy, fieldError, inputField } from './form-fields.ts';

export function signInForm(
  session: AppSession,
  options: {
    version: number | undefined;
    values: SignInValues;
    /** Whether a client secret is stored (it is never shown). */
    secretStored: boolean;
    errors: FieldErrors;
  },
): Html {
  const { values, errors } = options;
  const field = (name: keyof SignInValues, label: string, extra?: Html) =>
    inputField({
      id: `oidc-${name}`,
      name,
      label,
      type: name === 'client_secret' ? 'password' : name === 'issuer' ? 'url' : 'text',
      value: String(values[name]),
      error: errors[name],
      extra: extra ?? null,
    });
  return html`<form method="post" action="/app/admin/sign-in" class="decide card" style="margin-top:0">
    ${configFields(session, options.version)}
    ${field('name', 'Provider name (on the button: “Sign in with …”)', html`maxlength="100"`)}
    ${field('issuer', 'Issuer URL (empty: no sign-in with an identity provider)', html`maxlength="2000"`)}
    ${field('client_id', 'Client id', html`maxlength="500"`)}
    ${field(
      'client_secret',
      options.secretStored
        ? 'Client secret (stored; leave empty to keep it)'
        : 'Client secret (empty: a public client)',
      html`maxlength="2000" autocomplete="off"`,
    )}
    ${field('roles_claim', 'Claim that carries roles or groups (optional, like groups)', html`maxlength="200"`)}
    <label for="oidc-roles"
      >Role of each claim value, one per line: <code>value = admin|approver|viewer</code></label
    >
    <textarea id="oidc-roles" name="roles" rows="3" ${describedBy('oidc-roles', errors.roles)}>
${values.roles}</textarea>
    ${fieldError('oidc-roles', errors.roles)}
    <label
      ><input type="checkbox" name="just_in_time" value="yes" ${checked(values.just_in_time)} /> Just-in-time
      membership: a verified address of the provider that is no member joins (the mapped role, or
      viewer)</label
    >
    <label
      ><input type="checkbox" name="required" value="yes" ${checked(values.required)} /> Require it: sign-in
      links and passkeys then work for admins only (break-glass)</label
    >
    ${fieldError('oidc-required', errors.required ?? errors.just_in_time)}
    <div class="buttons"><button type="submit">Save</button></div>
  </form>`;
}

/** Checks that the stored provider answers with its metadata, under the issuer configured. */
export const testConnectionForm = (session: AppSession, result: { ok: boolean; text: string } | null) =>
  html`<form method="post" action="/app/admin/sign-in/test" class="card">
    ${csrfField(session)}
    ${when(
      result,
      () => html`<p class="${result!.ok ? 'notice' : 'error'}" role="status">${result!.text}</p>`,
    )}
    <div class="buttons"><button type="submit" class="secondary">Test the connection</button></div>
  </form>`;
