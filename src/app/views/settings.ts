/** The member's own settings page (`/app/settings`): where requests go, and away and quiet hours. */
import type { AppSession } from '../../services/sign-in.ts';
import { type AwayErrors, type AwayValues, awayValuesOf, type MemberEntry } from '../forms/away.ts';
import { sameEmail } from '../forms/members.ts';
import { type AddressName, type AddressValues, ADDRESS_NAMES, addressValuesOf } from '../forms/settings.ts';
import { type Html, html, time, when } from '../html.ts';
import { configFields, inputField, issueSummary, type VersionedConfig } from './form-fields.ts';
import { awayFields } from './away.ts';

/** What the form shows again after a refused save: as typed, with each field's problem. */
export interface SettingsDraft {
  values?: AwayValues;
  errors?: AwayErrors;
  addresses?: AddressValues;
  addressErrors?: Partial<AddressValues>;
  /** The digest window as typed, and its problem. */
  digest?: string;
  digestError?: string;
  /** Problems that belong to no field of the form. */
  problems?: string[];
}

const ADDRESS_LABELS: Record<AddressName, string> = {
  phone: 'Phone for SMS (optional, E.164 like +15550100)',
  slack_user_id: 'Slack user id (optional, like U01ABC)',
  teams_user_id: 'Teams user id (optional, your Microsoft Entra object id)',
};

/** A delegation in words, from the stored entry: ended, planned or in force now. */
function delegationStatus(entry: MemberEntry, config: VersionedConfig, now: number): Html | null {
  const delegation = entry.delegate;
  if (!delegation) return null;
  const delegate = config.members?.find((m) => sameEmail(m.email, delegation.to))?.name ?? delegation.to;
  const from = Date.parse(delegation.from);
  const until = Date.parse(delegation.until);
  if (until <= now) return html`Your last delegation, to ${delegate}, ended ${time(until)}.`;
  return from > now
    ? html`You will be away from ${time(from)} until ${time(until)}: ${delegate} decides for you then.`
    : html`You are away until ${time(until)}: ${delegate} decides for you.`;
}

/** Whose holds the member decides now, as their delegate. */
function decidingFor(me: MemberEntry, config: VersionedConfig, now: number): Html | null {
  const away = (config.members ?? []).filter(
    (m) =>
      m.delegate &&
      sameEmail(m.delegate.to, me.email) &&
      Date.parse(m.delegate.from) <= now &&
      now < Date.parse(m.delegate.until),
  );
  return when(
    away.length > 0,
    () =>
      html`<ul class="away-note">
        ${away.map(
          (m) =>
            html`<li>
              You decide for <strong>${m.name}</strong>, who is away until
              ${time(Date.parse(m.delegate!.until))}.
            </li>`,
        )}
      </ul>`,
  );
}

/**
 * Where the member's approval requests go: once a member has acted, only they change these (issue 37),
 * here; an admin may only clear one. E-mail is the member's identity and is not changed here.
 */
function addressFields(me: MemberEntry, draft: SettingsDraft): Html {
  const values = draft.addresses ?? addressValuesOf(me);
  return html`<fieldset class="plain">
    <legend><strong>Where your approval requests go</strong></legend>
    <p class="muted" style="margin:0">
      Besides your e-mail. Only you change these once you have used your account; admins can only clear them.
      Which of them you are notified by is set by your admins.
    </p>
    ${ADDRESS_NAMES.map((name) =>
      inputField({
        id: `me-${name}`,
        name,
        label: ADDRESS_LABELS[name],
        type: 'text',
        value: values[name],
        error: draft.addressErrors?.[name],
        extra: name === 'phone' ? html`inputmode="tel" autocomplete="tel"` : html`autocomplete="off"`,
      }),
    )}
  </fieldset>`;
}

/** How long the member's requests and reminders gather before they go as one message (a digest). */
const digestField = (me: MemberEntry, draft: SettingsDraft) =>
  html`<fieldset class="plain">
    <legend><strong>Digest</strong></legend>
    ${inputField({
      id: 'me-digest_minutes',
      name: 'digest_minutes',
      label:
        "Minutes your requests gather before they go as one message per channel (0 to 60; 0: each at once; empty: the workspace's)",
      type: 'text',
      value:
        draft.digest ??
        (me.digest_minutes === undefined || me.digest_minutes === null ? '' : String(me.digest_minutes)),
      error: draft.digestError,
      extra: html`inputmode="numeric" autocomplete="off"`,
    })}
    <p class="muted" style="margin:0">
      Urgent holds and second approvals of four-eyes holds always go at once.
    </p>
  </fieldset>`;

/** The page's body for the signed-in member (`me`, their entry in the workspace file). */
export function settingsView(
  session: AppSession,
  config: VersionedConfig,
  me: MemberEntry,
  now: number,
  draft: SettingsDraft = {},
): Html {
  const status = delegationStatus(me, config, now);
  const delegates =
    me.role === 'viewer'
      ? null
      : (config.members ?? [])
          .filter((m) => m.role !== 'viewer' && !sameEmail(m.email, me.email))
          .map((m) => ({ email: m.email, name: m.name }));
  return html`<div class="settings">
    <h1>Away and quiet hours</h1>
    <p class="muted">
      Your own settings. Each save is recorded in the workspace's history and evidence under your name, like
      any change to the workspace.
    </p>
    ${issueSummary(draft.problems ?? [])} ${decidingFor(me, config, now)}
    <p><a href="/app/settings/passkeys">Passkeys</a>: sign in, and sign approvals, with your device.</p>
    <form method="post" action="/app/settings" class="decide card">
      ${configFields(session, config.version)} ${addressFields(me, draft)} ${digestField(me, draft)}
      ${when(status, () => html`<p class="away-note">${status}</p>`)}
      ${awayFields(draft.values ?? awayValuesOf(me), draft.errors ?? {}, {
        id: 'me',
        you: true,
        delegates,
      })}
      ${when(
        delegates === null,
        () => html`<p class="muted">Viewers do not decide, so nobody decides in their place.</p>`,
      )}
      <div class="buttons"><button type="submit">Save</button></div>
    </form>
  </div>`;
}
