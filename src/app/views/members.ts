/** The Members page's views: the member list, the member form, and a new sign-in link. */
import type { WorkspaceConfig } from '../../services/config-file.ts';
import { type AppSession, INVITE_DAYS } from '../../services/sign-in.ts';
import { copyable } from '../copyable.ts';
import type { MemberEntry } from '../forms/away.ts';
import type { FieldErrors } from '../forms/form.ts';
import { CHANNELS, type MemberValues, ROLES, sameEmail } from '../forms/members.ts';
import { type Html, html, time, when } from '../html.ts';
import {
  checked,
  configFields,
  describedBy,
  fieldError,
  inputField,
  selected,
  type VersionedConfig,
} from './form-fields.ts';
import { awayFields } from './away.ts';

const CHANNEL_NAMES: Record<string, string> = { email: 'e-mail', sms: 'SMS', slack: 'Slack', teams: 'Teams' };

/** A member's own URL (edit form; `/delete`, `/invite` below it). */
export const memberPath = (email: string) => `/app/admin/members/${encodeURIComponent(email)}`;

/** The members who may decide in `email`'s place: the workspace's admins and approvers but them. */
export const delegatesFor = (config: WorkspaceConfig, email: string) =>
  (config.members ?? [])
    .filter((m) => m.role !== 'viewer' && !sameEmail(m.email, email))
    .map((m) => ({ email: m.email, name: m.name }));

type Input = (name: keyof MemberValues, label: string, type: string, extra?: Html | null) => Html;

/** Where the member's requests go: the addresses, and the channels that use them. */
const reachFields = (input: Input, values: MemberValues, errors: FieldErrors) =>
  html`${input('phone', 'Phone for SMS (optional, E.164 like +15550100)', 'text', html`inputmode="tel"`)}
    ${input('slack_user_id', 'Slack user id (optional, like U01ABC)', 'text')}
    ${input(
      'teams_user_id',
      'Teams user id (optional, their Microsoft Entra object id)',
      'text',
      html`maxlength="36" autocomplete="off"`,
    )}
    <p class="muted" style="margin:0">
      Their decision links and codes go to these. Once the member has used their account, only they change
      them, on their own Settings page; you can still clear one. Each change is in the evidence, and the
      member is told by e-mail.
    </p>
    <fieldset class="plain" ${describedBy('m-channels', errors.channels)}>
      <legend><strong>Notify by</strong></legend>
      <div class="row">
        ${CHANNELS.map(
          (channel) =>
            html`<label class="choice"
              ><input
                type="checkbox"
                name="channels"
                value="${channel}"
                ${checked(values.channels.includes(channel))}
              />
              ${CHANNEL_NAMES[channel]}</label
            >`,
        )}
      </div>
    </fieldset>
    ${fieldError('m-channels', errors.channels)}`;

/**
 * The form that adds a member (posted to the list) or edits one (posted to the member's URL, which
 * names them: their e-mail is not a field then).
 */
export function memberForm(
  session: AppSession,
  version: number | undefined,
  mode: 'add' | 'edit',
  values: MemberValues,
  errors: FieldErrors,
  /** Who may decide in this member's place: the other admins and approvers. */
  delegates: { email: string; name: string }[],
): Html {
  const input: Input = (name, label, type, extra = null) =>
    inputField({
      id: `m-${name}`,
      name,
      label,
      type,
      value: values[name] as string,
      error: errors[name],
      extra,
    });
  return html`<form
    method="post"
    action="${mode === 'add' ? '/app/admin/members' : memberPath(values.email)}"
    class="decide"
  >
    ${configFields(session, version)}
    ${
      mode === 'add'
        ? input(
            'email',
            'E-mail (their sign-in name)',
            'email',
            html`required maxlength="254" autocomplete="off"`,
          )
        : html`<p><strong>E-mail</strong><br />${values.email}</p>`
    }
    ${input('name', 'Name', 'text', html`required maxlength="200"`)}
    <label for="m-role">Role</label>
    <select id="m-role" name="role" ${describedBy('m-role', errors.role)}>
      ${ROLES.map((role) => html`<option value="${role}" ${selected(values.role === role)}>${role}</option>`)}
    </select>
    ${fieldError('m-role', errors.role)}
    <p class="muted" style="margin:0">
      Admins manage the workspace and approve; approvers decide; viewers only look.
    </p>
    ${reachFields(input, values, errors)}
    <label for="m-agents"
      >Agents acting for this member <span class="muted">(agent ids, one per line)</span></label
    >
    <textarea id="m-agents" name="agents" rows="2" ${describedBy('m-agents', errors.agents)}>
${values.agents}</textarea>
    ${fieldError('m-agents', errors.agents)}
    <p class="muted" style="margin:0">The member never decides a hold one of these agents asked for.</p>
    ${awayFields(values.away, errors, { id: 'm', you: false, delegates })}
    <div class="buttons">
      <button type="submit">${mode === 'add' ? 'Add member' : 'Save member'}</button>
      ${when(mode === 'edit', () => html`<a href="/app/admin/members">Cancel</a>`)}
    </div>
  </form>`;
}

/** The member's zone, and their quiet hours in it: `quiet 20:00–08:00 and weekends`. */
const zoneView = ({ time_zone: zone, quiet_hours: quiet }: MemberEntry) =>
  html`${zone ?? 'UTC'}${
    quiet
      ? html`<br /><span class="muted"
            >quiet ${quiet.from}–${quiet.to}${quiet.weekends ? ' and weekends' : ''}</span
          >`
      : null
  }`;

/** Who decides in the member's place and when: in force now, planned, or over. */
function awayView(m: MemberEntry, members: readonly MemberEntry[], now: number): Html {
  const delegation = m.delegate;
  if (!delegation) return html`<span class="muted">—</span>`;
  const delegate = members.find((other) => sameEmail(other.email, delegation.to))?.name ?? delegation.to;
  const from = Date.parse(delegation.from);
  const until = Date.parse(delegation.until);
  if (until <= now) return html`<span class="muted">was away until ${time(until)} (${delegate})</span>`;
  return from > now
    ? html`away from ${time(from)} until ${time(until)}: <strong>${delegate}</strong> decides`
    : html`away until ${time(until)}: <strong>${delegate}</strong> decides`;
}

/** The channels with the addresses they use, and addresses kept without their channel. */
function reachView(m: MemberEntry): Html {
  const channels = m.channels ?? ['email'];
  const ids = [
    m.phone ? `phone ${m.phone}` : null,
    m.slack_user_id ? `Slack ${m.slack_user_id}` : null,
    m.teams_user_id ? `Teams ${m.teams_user_id}` : null,
  ].filter((id) => id !== null);
  return html`${channels.map((c) => CHANNEL_NAMES[c] ?? c).join(', ') || html`<span class="muted">none</span>`}
  ${ids.length > 0 ? html`<br /><span class="muted ids">${ids.join(' · ')}</span>` : null}`;
}

export function memberTable(config: VersionedConfig, session: AppSession, now: number): Html {
  const members = config.members ?? [];
  const groupsOf = (email: string) =>
    Object.entries(config.groups ?? {})
      .filter(([, emails]) => emails.some((e) => sameEmail(e, email)))
      .map(([name]) => name);
  return html`<table class="responsive members">
    <thead>
      <tr>
        <th>Member</th>
        <th>Role</th>
        <th>Notified by</th>
        <th>Groups</th>
        <th>Time zone</th>
        <th>Away</th>
        <th><span class="muted">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${members.map(
        (m) =>
          html`<tr>
            <td>
              ${m.name}${sameEmail(m.email, session.member.email) ? html` <span class="muted">(you)</span>` : null}
              <br /><span class="muted">${m.email}</span>
              ${when(m.agents?.length, () => html`<br /><span class="muted">agents: ${m.agents!.join(', ')}</span>`)}
            </td>
            <td data-label="Role" class="nowrap">${m.role}</td>
            <td data-label="Notified by">${reachView(m)}</td>
            <td data-label="Groups">${groupsOf(m.email).join(', ') || html`<span class="muted">—</span>`}</td>
            <td data-label="Time zone">${zoneView(m)}</td>
            <td data-label="Away">${awayView(m, members, now)}</td>
            <td>
              <div class="row">
                <a href="${memberPath(m.email)}">Edit<span class="visually-hidden"> ${m.email}</span></a>
                <form method="post" action="${memberPath(m.email)}/invite">
                  ${configFields(session, config.version)}
                  <button type="submit" class="link">
                    Invite<span class="visually-hidden"> ${m.email}</span>
                  </button>
                </form>
                ${when(
                  !sameEmail(m.email, session.member.email),
                  () =>
                    html`<form method="post" action="${memberPath(m.email)}/delete">
                      ${configFields(session, config.version)}
                      <button type="submit" class="link">Remove…</button>
                    </form>`,
                )}
              </div>
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** The members who may decide in `email`'s place: the workspace's admins and approvers but them. */

/**
 * A sign-in link just made: a first one, shown once here, or one sent to the member's own e-mail
 * because they have signed in before (issue 37).
 */
export const inviteCard = (
  email: string,
  invite: { delivery: 'shown'; url: string } | { delivery: 'email' },
) =>
  invite.delivery === 'email'
    ? html`<section class="card" aria-labelledby="invite-made" role="status">
        <h2 id="invite-made">Sign-in link sent to ${email}</h2>
        <p>
          ${email} has signed in before, so the link went to their own e-mail only. It works once, within
          ${INVITE_DAYS} days.
        </p>
      </section>`
    : html`<section class="card" aria-labelledby="invite-made">
        <h2 id="invite-made">Sign-in link for ${email}</h2>
        <p>
          Send this link to ${email}: it signs them in once, within ${INVITE_DAYS} days. Anyone with the link
          can use it, so send it only to them. It will not be shown again, and once they have used their
          account (signed in, or decided anywhere), new links go to their e-mail only.
        </p>
        ${copyable('invite-link', invite.url, 'the link')}
      </section>`;
