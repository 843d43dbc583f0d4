/** The pages of signing in: the sign-in form, a sign-in link's page, and the first run's setup. */
import type { ServiceContext } from '../../services/context.ts';
import type { SetupValues } from '../forms/auth.ts';
import { type Html, html, when } from '../html.ts';
import { layout } from '../layout.ts';
import { passkeySignInForm } from './passkeys.ts';

export const setupPage = (error?: string, values: Partial<SetupValues> = {}): Html =>
  layout(
    { title: 'Set up' },
    html`<div class="narrow card">
      <h1>Set up approvals</h1>
      <p>Create the first workspace and its admin. You are signed in as that admin afterwards.</p>
      ${when(error, () => html`<p class="error" role="alert">${error}</p>`)}
      <form method="post" action="/app/setup" class="decide">
        <label for="name">Workspace name</label
        ><input id="name" name="name" type="text" required maxlength="200" value="${values.name ?? ''}" />
        <label for="slug">Short name (lowercase letters, digits, dashes)</label
        ><input
          id="slug"
          name="slug"
          type="text"
          required
          pattern="[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
          value="${values.slug ?? ''}"
        />
        <label for="admin_name">Your name</label
        ><input
          id="admin_name"
          name="admin_name"
          type="text"
          required
          maxlength="200"
          value="${values.admin_name ?? ''}"
        />
        <label for="admin_email">Your e-mail</label
        ><input
          id="admin_email"
          name="admin_email"
          type="email"
          required
          value="${values.admin_email ?? ''}"
        />
        <div class="buttons"><button type="submit">Create workspace</button></div>
      </form>
    </div>`,
  );

/** A workspace's identity provider, offered on the sign-in page. */
export interface ProviderButton {
  slug: string;
  name: string;
}

/**
 * Sign-in with a workspace's identity provider: its button when the page was opened for that workspace
 * (`?workspace=<slug>`), otherwise a form asking for the workspace's short name.
 */
const providerSignIn = (provider: ProviderButton | null, next: string | null) =>
  html`<form method="get" action="/app/sso" class="decide">
    ${when(next, () => html`<input type="hidden" name="next" value="${next}" />`)}
    ${
      provider
        ? html`<input type="hidden" name="workspace" value="${provider.slug}" />
            <div class="buttons"><button type="submit">Sign in with ${provider.name}</button></div>`
        : html`<label for="sso-workspace"
              >Or sign in with your company's identity provider: workspace short name</label
            ><input
              id="sso-workspace"
              name="workspace"
              type="text"
              required
              maxlength="63"
              autocomplete="organization"
            />
            <div class="buttons"><button type="submit" class="secondary">Continue</button></div>`
    }
  </form>`;

/** The sign-in form; `message` says what became of a request for a link, `next` where to go after. */
export const loginPage = (
  ctx: ServiceContext,
  message: string | null,
  next: string | null = null,
  provider: ProviderButton | null = null,
): Html =>
  layout(
    { title: 'Sign in' },
    html`<div class="narrow card">
      <h1>Sign in</h1>
      ${message ? html`<p class="notice" role="status">${message}</p>` : null}
      ${when(provider, () => providerSignIn(provider, next))}
      <form method="post" action="/app/login" class="decide">
        ${when(next, () => html`<input type="hidden" name="next" value="${next}" />`)}
        <label for="email">E-mail</label
        ><input id="email" name="email" type="email" autocomplete="email" required />
        <div class="buttons"><button type="submit">Send me a sign-in link</button></div>
      </form>
      ${passkeySignInForm(ctx)} ${when(!provider, () => providerSignIn(null, next))}
      ${when(!ctx.mailer, () => html`<p class="muted">E-mail is not set up on this service. Ask an admin for an invite link (<code>npx approvals users invite</code>).</p>`)}
    </div>`,
  );

/** A sign-in link's page: a button, so that mail scanners that fetch links do not use it up. */
export const signInLinkPage = (token: string): Html =>
  layout(
    { title: 'Sign in' },
    html`<div class="narrow card">
      <h1>Sign in</h1>
      <form method="post" action="/app/login/${token}">
        <button type="submit">Continue to approvals</button>
      </form>
    </div>`,
  );
