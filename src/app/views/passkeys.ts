/**
 * The Passkeys settings page (`/app/settings/passkeys`), the page an e-mailed enrolment link opens, and
 * the sign-in page's passkey button. The browser side is `static/passkey.js`.
 */
import type { ServiceContext } from '../../services/context.ts';
import type { listMemberPasskeys } from '../../services/passkey-enrolment.ts';
import { relyingParty } from '../../services/passkeys.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { type Html, html, time, when } from '../html.ts';
import { PASSKEY_SCRIPT as SCRIPT } from './passkey.ts';

type MemberPasskey = Awaited<ReturnType<typeof listMemberPasskeys>>[number];

/** "Sign in with a passkey" on the sign-in page; none where passkeys cannot work (PUBLIC_URL an IP). */
export function passkeySignInForm(ctx: ServiceContext): Html | null {
  if (!relyingParty(ctx)) return null;
  return html`<form
      method="post"
      action="/app/login/passkey"
      class="decide"
      data-passkey="sign-in"
      data-passkey-options="/app/login/passkey/options"
    >
      <input type="hidden" name="ceremony" value="" />
      <input type="hidden" name="response" value="" />
      <div class="buttons">
        <button type="submit" class="secondary">Sign in with a passkey</button>
        <span class="muted" data-passkey-status role="status"></span>
      </div>
    </form>
    ${SCRIPT}`;
}

/** The enrolment form; `link`: the token of the e-mailed link it came from, if any. */
function enrolForm(session: AppSession, link: string | null): Html {
  return html`<form
      method="post"
      action="/app/settings/passkeys"
      class="decide card"
      data-passkey="enrol"
      data-passkey-options="/app/settings/passkeys/options"
    >
      <h2>Add a passkey</h2>
      <input type="hidden" name="_csrf" value="${session.csrfToken}" />
      <input type="hidden" name="ceremony" value="" />
      <input type="hidden" name="response" value="" />
      <input type="hidden" name="confirmation" value="" />
      ${when(link, () => html`<input type="hidden" name="link" value="${link}" />`)}
      <label for="passkey-name">Name (which device is it?)</label>
      <input id="passkey-name" name="name" type="text" maxlength="100" placeholder="Laptop" />
      <div class="buttons">
        <button type="submit">Add a passkey</button>
        <span class="muted" data-passkey-status role="status"></span>
      </div>
    </form>
    ${SCRIPT}`;
}

function passkeyTable(session: AppSession, passkeys: MemberPasskey[]): Html {
  if (passkeys.length === 0) return html`<p>You have no passkey yet.</p>`;
  return html`<table class="responsive">
    <thead>
      <tr>
        <th>Name</th>
        <th>Added</th>
        <th>Last used</th>
        <th><span class="muted">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${passkeys.map(
        (passkey) =>
          html`<tr>
            <td>${passkey.name}</td>
            <td data-label="Added">${time(passkey.createdAt)}</td>
            <td data-label="Last used">
              ${passkey.lastUsedAt === null ? html`<span class="muted">never</span>` : time(passkey.lastUsedAt)}
            </td>
            <td>
              <form method="post" action="/app/settings/passkeys/remove">
                <input type="hidden" name="_csrf" value="${session.csrfToken}" />
                <input type="hidden" name="id" value="${passkey.id}" />
                <button type="submit" class="link">
                  Remove<span class="visually-hidden"> ${passkey.name}</span>
                </button>
              </form>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/**
 * How to add one: a later passkey is confirmed by one the member has (or from an e-mailed link, the
 * device lost); the first comes from a link sent to their own e-mail.
 */
function addPasskey(session: AppSession, passkeys: MemberPasskey[], usable: boolean): Html {
  if (!usable)
    return html`<p class="muted">
      Passkeys need the service to be reached by a host name (PUBLIC_URL), not an IP address.
    </p>`;
  if (passkeys.length > 0)
    return html`${enrolForm(session, null)}
      <form method="post" action="/app/settings/passkeys/link" class="decide">
        <input type="hidden" name="_csrf" value="${session.csrfToken}" />
        <p class="muted">
          Adding a passkey asks one you have to confirm it. Lost the device? Get a link by e-mail instead.
        </p>
        <div class="buttons"><button type="submit" class="secondary">Send me a link</button></div>
      </form>`;
  return html`<form method="post" action="/app/settings/passkeys/link" class="decide card">
    <h2>Add a passkey</h2>
    <input type="hidden" name="_csrf" value="${session.csrfToken}" />
    <p>
      Your first passkey is added from a link sent to your own e-mail (${session.member.email}), so that
      nobody else signed in as you can add one.
    </p>
    <div class="buttons"><button type="submit">Send me a link</button></div>
  </form>`;
}

export function passkeysView(
  session: AppSession,
  passkeys: MemberPasskey[],
  usable: boolean,
  problems: string[] = [],
): Html {
  return html`<div class="settings">
    <h1>Passkeys</h1>
    <p class="muted">
      A passkey is a key pair your device (or password manager) keeps; only its public half is stored here,
      and in the workspace's evidence. Sign in with it, and sign approvals with it: where a rule asks for it,
      your approval carries your device's signature over the exact action, which anyone can check.
    </p>
    ${when(
      problems.length > 0,
      () => html`<div class="error" role="alert">${problems.map((p) => html`<p>${p}</p>`)}</div>`,
    )}
    ${passkeyTable(session, passkeys)} ${addPasskey(session, passkeys, usable)}
  </div>`;
}

/** The page the e-mailed enrolment link opens, for the member it was sent to. */
export const enrolLinkView = (session: AppSession, token: string) =>
  html`<div class="settings">
    <h1>Add a passkey</h1>
    <p>For ${session.member.name} (${session.member.email}).</p>
    ${enrolForm(session, token)}
  </div>`;
