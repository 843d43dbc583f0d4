/** Members and groups: add, edit and remove members; create groups, set their members, delete them. */
import type { FastifyInstance } from 'fastify';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import { type AppSession, INVITE_DAYS, inviteFromApp } from '../../../services/sign-in.ts';
import { copyable } from '../../copyable.ts';
import { type Html, html, time, when } from '../../html.ts';
import { field, fields, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import {
  awayFields,
  awayIssue,
  type AwayValues,
  awayValuesOf,
  type MemberEntry,
  readAwayForm,
} from '../away-form.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checked,
  configFields,
  confirmCard,
  currentConfig,
  describedBy,
  describeIssue,
  fieldError,
  inputField,
  issueSummary,
  readAtOf,
  selected,
  versionPassedOn,
  type VersionedConfig,
} from './shared.ts';

const ROLES = ['admin', 'approver', 'viewer'] as const;
const CHANNELS = ['email', 'sms', 'slack', 'teams'] as const;
const CHANNEL_NAMES: Record<string, string> = { email: 'e-mail', sms: 'SMS', slack: 'Slack', teams: 'Teams' };
const GROUP_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

const NOTICES: Record<string, string> = {
  added: 'Member added. Send them a sign-in link: npx approvals users invite.',
  updated: 'Member updated.',
  removed: 'Member removed. They can no longer sign in or decide.',
  group_saved: 'Group saved.',
  group_deleted: 'Group deleted.',
};

interface MemberValues {
  email: string;
  name: string;
  role: string;
  phone: string;
  slack_user_id: string;
  teams_user_id: string;
  channels: string[];
  /** The agent identities that act for the member, one per line. */
  agents: string;
  away: AwayValues;
}

const blankMember: MemberValues = {
  email: '',
  name: '',
  role: 'approver',
  phone: '',
  slack_user_id: '',
  teams_user_id: '',
  channels: ['email'],
  agents: '',
  away: awayValuesOf(undefined),
};

const valuesOf = (m: MemberEntry): MemberValues => ({
  email: m.email,
  name: m.name,
  role: m.role,
  phone: m.phone ?? '',
  slack_user_id: m.slack_user_id ?? '',
  teams_user_id: m.teams_user_id ?? '',
  channels: m.channels ?? ['email'],
  agents: (m.agents ?? []).join('\n'),
  away: awayValuesOf(m),
});

const sameEmail = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

function memberForm(
  session: AppSession,
  version: number | undefined,
  mode: 'add' | 'edit',
  values: MemberValues,
  errors: Record<string, string>,
  /** Who may decide in this member's place: the other admins and approvers. */
  delegates: { email: string; name: string }[],
): Html {
  const input = (name: keyof MemberValues, label: string, type: string, extra: Html | null = null) =>
    inputField({
      id: `m-${name}`,
      name,
      label,
      type,
      value: values[name] as string,
      error: errors[name],
      extra,
    });
  return html`<form method="post" action="/app/admin/members/save" class="decide">
    ${configFields(session, version)}
    <input type="hidden" name="mode" value="${mode}" />
    ${
      mode === 'add'
        ? input(
            'email',
            'E-mail (their sign-in name)',
            'email',
            html`required maxlength="254" autocomplete="off"`,
          )
        : html`<input type="hidden" name="email" value="${values.email}" />
            <p><strong>E-mail</strong><br />${values.email}</p>`
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
    ${input('phone', 'Phone for SMS (optional, E.164 like +15550100)', 'text', html`inputmode="tel"`)}
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
    ${fieldError('m-channels', errors.channels)}
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

function memberTable(config: VersionedConfig, session: AppSession, now: number): Html {
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
                <a href="/app/admin/members/edit?email=${encodeURIComponent(m.email)}"
                  >Edit<span class="visually-hidden"> ${m.email}</span></a
                >
                <form method="post" action="/app/admin/members/invite">
                  ${configFields(session, config.version)}
                  <input type="hidden" name="email" value="${m.email}" />
                  <button type="submit" class="link">
                    Invite<span class="visually-hidden"> ${m.email}</span>
                  </button>
                </form>
                ${when(
                  !sameEmail(m.email, session.member.email),
                  () =>
                    html`<form method="post" action="/app/admin/members/remove">
                      ${configFields(session, config.version)}
                      <input type="hidden" name="email" value="${m.email}" />
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
const delegatesFor = (config: WorkspaceConfig, email: string) =>
  (config.members ?? [])
    .filter((m) => m.role !== 'viewer' && !sameEmail(m.email, email))
    .map((m) => ({ email: m.email, name: m.name }));

function memberChoices(config: WorkspaceConfig, chosen: string[], idPrefix: string): Html {
  return html`<div class="row" style="gap:0.25rem 1.25rem">
    ${(config.members ?? []).map(
      (m, index) =>
        html`<label class="choice" for="${idPrefix}-${index}"
          ><input
            id="${idPrefix}-${index}"
            type="checkbox"
            name="members"
            value="${m.email}"
            ${checked(chosen.some((e) => sameEmail(e, m.email)))}
          />
          ${m.name} <span class="muted">${m.email}${m.role === 'viewer' ? ' · viewer' : ''}</span></label
        >`,
    )}
  </div>`;
}

interface GroupDraft {
  mode: 'create' | 'edit';
  name: string;
  members: string[];
  error: string;
}

function groupSection(config: VersionedConfig, session: AppSession, draft: GroupDraft | null): Html {
  const groups = Object.entries(config.groups ?? {});
  const draftFor = (mode: 'create' | 'edit', name: string) =>
    draft && draft.mode === mode && draft.name === name ? draft : null;
  const create = draft?.mode === 'create' ? draft : null;
  return html`<h2 id="groups">Groups</h2>
    <p class="muted">Rules name a group as <code>group:&lt;name&gt;</code> in their approvers.</p>
    ${groups.length === 0 ? html`<p class="empty card">No groups yet.</p>` : null}
    ${groups.map(([name, emails], index) => {
      const mine = draftFor('edit', name);
      return html`<section class="card" aria-labelledby="group-${index}">
        <h3 id="group-${index}">${name} <span class="muted">(${emails.length})</span></h3>
        <form method="post" action="/app/admin/groups/save" class="decide">
          ${configFields(session, config.version)}
          <input type="hidden" name="mode" value="edit" />
          <input type="hidden" name="name" value="${name}" />
          <fieldset class="plain">
            <legend class="muted">Members of ${name}</legend>
            ${memberChoices(config, mine ? mine.members : emails, `g${index}`)}
          </fieldset>
          ${when(mine?.error, () => html`<p class="error" role="alert">${mine!.error}</p>`)}
          <div class="buttons"><button type="submit">Save members of ${name}</button></div>
        </form>
        <form method="post" action="/app/admin/groups/delete" style="margin-top:0.5rem">
          ${configFields(session, config.version)}
          <input type="hidden" name="name" value="${name}" />
          <button type="submit" class="link">Delete group ${name}…</button>
        </form>
      </section>`;
    })}
    <section class="card" aria-labelledby="new-group">
      <h3 id="new-group">Create a group</h3>
      <form method="post" action="/app/admin/groups/save" class="decide">
        ${configFields(session, config.version)}
        <input type="hidden" name="mode" value="create" />
        <label for="group-name">Name (letters, digits, _ . -)</label>
        <input
          id="group-name"
          name="name"
          type="text"
          required
          maxlength="100"
          pattern="[A-Za-z0-9_.\\-]{1,100}"
          value="${create?.name ?? ''}"
          ${describedBy('group-name', create?.error)}
        />
        ${fieldError('group-name', create?.error)}
        <fieldset class="plain">
          <legend><strong>Members</strong></legend>
          ${memberChoices(config, create?.members ?? [], 'gnew')}
        </fieldset>
        <div class="buttons"><button type="submit">Create group</button></div>
      </form>
    </section>`;
}

export function memberPages(app: FastifyInstance, { ctx }: PageDeps) {
  const overview = async (
    session: AppSession,
    options: {
      notice?: string | null;
      problems?: string[];
      /** Shown above the list: a sign-in link just made. */
      before?: Html;
      add?: { values: MemberValues; errors: Record<string, string> };
      group?: GroupDraft;
    } = {},
  ) => {
    const config = await currentConfig(ctx, session);
    const add = options.add?.values ?? blankMember;
    const body = html`<h1>Members</h1>
      ${issueSummary(options.problems ?? [])} ${options.before ?? null}
      ${memberTable(config, session, ctx.now())}
      <section class="card" aria-labelledby="add-member">
        <h2 id="add-member">Add a member</h2>
        ${memberForm(session, config.version, 'add', add, options.add?.errors ?? {}, delegatesFor(config, add.email))}
      </section>
      ${groupSection(config, session, options.group ?? null)}`;
    return adminPage(ctx, session, { title: 'Members', active: 'members', notice: options.notice }, body);
  };

  const editPage = async (
    session: AppSession,
    config: WorkspaceConfig,
    version: number | undefined,
    values: MemberValues,
    errors: Record<string, string>,
    problems: string[],
  ) =>
    adminPage(
      ctx,
      session,
      { title: `Edit ${values.email}`, active: 'members' },
      html`<p><a href="/app/admin/members">← Members</a></p>
        <div class="card" style="max-width:36rem">
          <h1>Edit member</h1>
          ${issueSummary(problems)}
          ${memberForm(session, version, 'edit', values, errors, delegatesFor(config, values.email))}
        </div>`,
    );

  app.get<{ Querystring: { notice?: string } }>('/app/admin/members', ADMIN, async (request, reply) => {
    const notice = NOTICES[request.query.notice ?? ''] ?? null;
    return sendPage(reply, await overview(request.appSession!, { notice }));
  });

  app.get<{ Querystring: { email?: string } }>('/app/admin/members/edit', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const config = await currentConfig(ctx, session);
    const member = config.members?.find((m) => sameEmail(m.email, request.query.email ?? ''));
    if (!member) return problemPage(reply, 404, 'Not found', 'No such member in this workspace.', session);
    return sendPage(reply, await editPage(session, config, config.version, valuesOf(member), {}, []));
  });

  app.post<{ Body: Form }>('/app/admin/members/save', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const body = request.body;
    const mode = field(body, 'mode') === 'edit' ? 'edit' : 'add';
    const current = await currentConfig(ctx, session);
    const members = [...(current.members ?? [])];
    const at = members.findIndex((m) => sameEmail(m.email, field(body, 'email')));
    const away = readAwayForm(body, ctx.now(), members[at]?.delegate);
    const values: MemberValues = {
      email: field(body, 'email'),
      name: field(body, 'name'),
      role: field(body, 'role'),
      phone: field(body, 'phone').replace(/[\s()-]/g, ''),
      slack_user_id: field(body, 'slack_user_id'),
      teams_user_id: field(body, 'teams_user_id'),
      channels: fields(body, 'channels'),
      agents: field(body, 'agents'),
      away: away.values,
    };
    const agents = [...new Set(values.agents.split('\n').map((agent) => agent.trim()))].filter(Boolean);
    const errors: Record<string, string> = { ...away.errors };
    if (mode === 'add' && at >= 0) errors.email = 'Is already a member of this workspace.';
    if (mode === 'edit' && at < 0)
      return problemPage(reply, 404, 'Not found', 'No such member in this workspace.', session);
    if (!(ROLES as readonly string[]).includes(values.role))
      errors.role = 'Choose admin, approver or viewer.';
    if (
      mode === 'edit' &&
      sameEmail(values.email, session.member.email) &&
      values.role !== session.member.role
    )
      errors.role = 'You cannot change your own role. Ask another admin.';
    if (values.channels.some((c) => !(CHANNELS as readonly string[]).includes(c)))
      errors.channels = 'Choose among e-mail, SMS, Slack and Teams.';
    else if (values.channels.includes('sms') && !values.phone) errors.phone = 'SMS needs a phone number.';
    else if (values.channels.includes('slack') && !values.slack_user_id)
      errors.slack_user_id = 'Slack needs a Slack user id.';
    else if (values.channels.includes('teams') && !values.teams_user_id)
      errors.teams_user_id = 'Teams needs a Teams user id.';

    const entry = {
      email: values.email,
      name: values.name,
      role: values.role,
      ...(values.phone ? { phone: values.phone } : {}),
      ...(values.slack_user_id ? { slack_user_id: values.slack_user_id } : {}),
      ...(values.teams_user_id ? { teams_user_id: values.teams_user_id } : {}),
      channels: values.channels,
      ...(agents.length > 0 ? { agents } : {}),
      ...away.change,
    } as MemberEntry;
    let index = mode === 'edit' ? at : members.length;
    members[index] = entry;
    const change: WorkspaceConfig = { members };
    const readAt = readAtOf(body);

    const fail = async (issues: FieldIssue[], described: WorkspaceConfig) => {
      const problems: string[] = [];
      for (const issue of issues) {
        const [part, i, name, ...rest] = issue.field.split('.');
        const mine = part === 'members' && Number(i) === index && name;
        const away = mine ? awayIssue([name, ...rest], issue.message) : null;
        if (away) errors[away[0]] ??= away[1];
        else if (mine && !errors[name]) errors[name] = issue.message;
        else problems.push(describeIssue(issue, described));
      }
      const page =
        mode === 'add'
          ? await overview(session, { problems, add: { values, errors } })
          : await editPage(session, current, readAt, values, errors, problems);
      return sendPage(reply, page, 422);
    };
    if (Object.keys(errors).length > 0) return fail([], change);
    // The same change to the members as they are now: one member added or replaced, the rest kept.
    const issues = await applyChange(ctx, session, readAt, (now) => {
      const list = [...(now.members ?? [])];
      const found = list.findIndex((m) => sameEmail(m.email, values.email));
      index = found >= 0 ? found : list.length;
      list[index] = entry;
      return { members: list };
    });
    if (issues) return fail(issues, { ...current, ...change });
    return reply.redirect(`/app/admin/members?notice=${mode === 'add' ? 'added' : 'updated'}`, 303);
  });

  // A first invitation is shown once in the answer to the POST, never stored in clear; a member who has
  // signed in before gets theirs by e-mail only, so that no admin can sign in as them (issue 37).
  app.post<{ Body: Form }>('/app/admin/members/invite', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const email = field(request.body, 'email');
    let invite;
    try {
      invite = await inviteFromApp(ctx, session, email);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      if (error.code === 'conflict')
        return sendPage(reply, await overview(session, { problems: [error.message] }), 409);
      return problemPage(reply, 404, 'Not found', 'No such member in this workspace.', session);
    }
    const before =
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
              Send this link to ${email}: it signs them in once, within ${INVITE_DAYS} days. Anyone with the
              link can use it, so send it only to them. It will not be shown again, and once they have used
              their account (signed in, or decided anywhere), new links go to their e-mail only.
            </p>
            ${copyable('invite-link', invite.url, 'the link')}
          </section>`;
    return sendPage(reply, await overview(session, { before }));
  });

  app.post<{ Body: Form }>('/app/admin/members/remove', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const email = field(request.body, 'email');
    const current = await currentConfig(ctx, session);
    const member = current.members?.find((m) => sameEmail(m.email, email));
    if (!member) return problemPage(reply, 404, 'Not found', 'No such member in this workspace.', session);
    if (sameEmail(member.email, session.member.email)) {
      return sendPage(
        reply,
        await overview(session, { problems: ['You cannot remove yourself. Ask another admin.'] }),
        422,
      );
    }
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Remove this member?',
        message: html`${member.name} (${member.email}) can no longer sign in, is taken out of every group and
        cannot decide any hold. Adding them again later brings them back, without their groups.`,
        action: '/app/admin/members/remove',
        fields: { email: member.email, ...versionPassedOn(request.body) },
        button: `Remove ${member.name}`,
        back: '/app/admin/members',
      });
      return sendPage(
        reply,
        await adminPage(ctx, session, { title: 'Remove member', active: 'members' }, body),
      );
    }
    // applyConfig takes the member out of their groups, and refuses if a rule would lose its approvers.
    const members = (current.members ?? []).filter((m) => m !== member);
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
      members: (now.members ?? []).filter((m) => !sameEmail(m.email, member.email)),
    }));
    if (issues) {
      const problems = issues.map((issue) => describeIssue(issue, { ...current, members }));
      return sendPage(reply, await overview(session, { problems }), 422);
    }
    return reply.redirect('/app/admin/members?notice=removed', 303);
  });

  app.post<{ Body: Form }>('/app/admin/groups/save', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const mode = field(request.body, 'mode') === 'edit' ? 'edit' : 'create';
    const name = field(request.body, 'name');
    const chosen = fields(request.body, 'members');
    const current = await currentConfig(ctx, session);
    const groups = { ...current.groups };
    const draft: GroupDraft = { mode, name, members: chosen, error: '' };
    if (!GROUP_NAME.test(name)) draft.error = 'Use 1 to 100 characters of A-Z a-z 0-9 _ . -';
    else if (mode === 'create' && Object.hasOwn(groups, name)) draft.error = 'A group with this name exists.';
    else if (mode === 'edit' && !Object.hasOwn(groups, name))
      return problemPage(reply, 404, 'Not found', 'No such group in this workspace.', session);
    else if (chosen.length === 0)
      draft.error =
        mode === 'create'
          ? 'Choose at least one member.'
          : 'Choose at least one member, or delete the group.';
    if (draft.error) return sendPage(reply, await overview(session, { group: draft }), 422);
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
      groups: { ...now.groups, [name]: chosen },
    }));
    if (issues) {
      draft.error = issues.map((issue) => describeIssue(issue, current)).join(' ');
      return sendPage(reply, await overview(session, { group: draft }), 422);
    }
    return reply.redirect('/app/admin/members?notice=group_saved#groups', 303);
  });

  app.post<{ Body: Form }>('/app/admin/groups/delete', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const name = field(request.body, 'name');
    const current = await currentConfig(ctx, session);
    if (!Object.hasOwn(current.groups ?? {}, name))
      return problemPage(reply, 404, 'Not found', 'No such group in this workspace.', session);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: `Delete group ${name}?`,
        message: 'Its members stay in the workspace. Rules that name this group must be changed first.',
        action: '/app/admin/groups/delete',
        fields: { name, ...versionPassedOn(request.body) },
        button: `Delete group ${name}`,
        back: '/app/admin/members#groups',
      });
      return sendPage(
        reply,
        await adminPage(ctx, session, { title: 'Delete group', active: 'members' }, body),
      );
    }
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
      groups: Object.fromEntries(Object.entries(now.groups ?? {}).filter(([group]) => group !== name)),
    }));
    if (issues) {
      const problems = issues.map((issue) => describeIssue(issue, current));
      return sendPage(reply, await overview(session, { problems }), 422);
    }
    return reply.redirect('/app/admin/members?notice=group_deleted', 303);
  });
}
