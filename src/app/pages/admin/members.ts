/**
 * Members (`/app/admin/members`, one member at `/app/admin/members/<e-mail>`): add, edit, invite and
 * remove members. The Groups part of the page is `groups.ts`.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import { ServiceError } from '../../../services/errors.ts';
import { type AppSession, inviteFromApp } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import type { FieldErrors } from '../../forms/form.ts';
import {
  attachMemberIssues,
  blankMember,
  type MemberValues,
  memberValuesOf,
  parseMemberForm,
  sameEmail,
} from '../../forms/members.ts';
import { type Html, html } from '../../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import { type GroupDraft, groupSection } from '../../views/groups.ts';
import { delegatesFor, inviteCard, memberForm, memberPath, memberTable } from '../../views/members.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  currentConfig,
  describeIssue,
  readAtOf,
  versionPassedOn,
} from './shared.ts';
import { confirmCard, issueSummary } from '../../views/form-fields.ts';

const NOTICES: Record<string, string> = {
  added: 'Member added. Send them a sign-in link: npx approvals users invite.',
  updated: 'Member updated.',
  removed: 'Member removed. They can no longer sign in or decide.',
  group_saved: 'Group saved.',
  group_deleted: 'Group deleted.',
};

/** What the Members page shows besides the list: a notice, a refused form again, a link just made. */
export interface MembersPageOptions {
  notice?: string | null;
  problems?: string[];
  /** Shown above the list: a sign-in link just made. */
  before?: Html;
  add?: { values: MemberValues; errors: FieldErrors };
  group?: GroupDraft;
}

type Ctx = PageDeps['ctx'];
type FormRequest<T extends object = object> = FastifyRequest<{ Body: Form } & T>;
type EmailRequest = FormRequest<{ Params: { email: string } }>;

/** The Members page; a refused form is shown again in it, with its problems. */
export async function membersPage(ctx: Ctx, session: AppSession, options: MembersPageOptions = {}) {
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
}

const editPage = (
  ctx: Ctx,
  session: AppSession,
  form: { config: WorkspaceConfig; version: number | undefined; values: MemberValues; errors: FieldErrors },
  problems: string[] = [],
) =>
  adminPage(
    ctx,
    session,
    { title: `Edit ${form.values.email}`, active: 'members' },
    html`<p><a href="/app/admin/members">← Members</a></p>
      <div class="card" style="max-width:36rem">
        <h1>Edit member</h1>
        ${issueSummary(problems)}
        ${memberForm(session, form.version, 'edit', form.values, form.errors, delegatesFor(form.config, form.values.email))}
      </div>`,
  );

/** The member's e-mail in the URL, as a form field is read: spaces around it are no part of it. */
const emailIn = (request: { params: { email: string } }) => request.params.email.trim();

const noSuchMember = (reply: FastifyReply, session: AppSession) =>
  problemPage(reply, 404, 'Not found', 'No such member in this workspace.', session);

/** Adds the member posted (no `email` given) or saves the member `email` names. */
async function saveMember(ctx: Ctx, request: FormRequest, reply: FastifyReply, email?: string) {
  const session = request.appSession!;
  const current = await currentConfig(ctx, session);
  const members = current.members ?? [];
  const saved = email === undefined ? undefined : members.find((m) => sameEmail(m.email, email));
  if (email !== undefined && !saved) return noSuchMember(reply, session);
  const own = saved && sameEmail(saved.email, session.member.email);
  const { values, result } = parseMemberForm(request.body, {
    now: ctx.now(),
    saved,
    members,
    ownRole: own ? session.member.role : undefined,
  });
  const readAt = readAtOf(request.body);
  const fail = async (errors: FieldErrors, problems: string[]) => {
    const page = saved
      ? await editPage(ctx, session, { config: current, version: readAt, values, errors }, problems)
      : await membersPage(ctx, session, { problems, add: { values, errors } });
    return sendPage(reply, page, 422);
  };
  if (!result.ok) return fail(result.errors, []);
  const entry = result.value;
  // The same change to the members as they are now: one member added or replaced, the rest kept.
  let index = -1;
  let changed: WorkspaceConfig = {};
  const issues = await applyChange(ctx, session, readAt, (now) => {
    const list = [...(now.members ?? [])];
    const found = list.findIndex((m) => sameEmail(m.email, entry.email));
    index = found >= 0 ? found : list.length;
    list[index] = entry;
    changed = { members: list };
    return changed;
  });
  if (issues) {
    const errors: FieldErrors = {};
    const elsewhere = attachMemberIssues(issues, `members.${index}`, errors);
    return fail(
      errors,
      elsewhere.map((issue) => describeIssue(issue, { ...current, ...changed })),
    );
  }
  return redirectWithNotice(reply, '/app/admin/members', saved ? 'updated' : 'added');
}

// A first invitation is shown once in the answer to the POST, never stored in clear; a member who has
// signed in before gets theirs by e-mail only, so that no admin can sign in as them (issue 37).
async function inviteMember(ctx: Ctx, request: EmailRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const email = emailIn(request);
  let invite;
  try {
    invite = await inviteFromApp(ctx, session, email);
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    if (error.code === 'conflict')
      return sendPage(reply, await membersPage(ctx, session, { problems: [error.message] }), 409);
    return noSuchMember(reply, session);
  }
  return sendPage(reply, await membersPage(ctx, session, { before: inviteCard(email, invite) }));
}

async function removeMember(ctx: Ctx, request: EmailRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const current = await currentConfig(ctx, session);
  const member = current.members?.find((m) => sameEmail(m.email, emailIn(request)));
  if (!member) return noSuchMember(reply, session);
  if (sameEmail(member.email, session.member.email)) {
    const problems = ['You cannot remove yourself. Ask another admin.'];
    return sendPage(reply, await membersPage(ctx, session, { problems }), 422);
  }
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: 'Remove this member?',
      message: html`${member.name} (${member.email}) can no longer sign in, is taken out of every group and
      cannot decide any hold. Adding them again later brings them back, without their groups.`,
      action: `${memberPath(member.email)}/delete`,
      fields: versionPassedOn(request.body),
      button: `Remove ${member.name}`,
      back: '/app/admin/members',
    });
    return sendPage(
      reply,
      await adminPage(ctx, session, { title: 'Remove member', active: 'members' }, body),
    );
  }
  // applyConfig takes the member out of their groups, and refuses if a rule would lose its approvers.
  const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
    members: (now.members ?? []).filter((m) => !sameEmail(m.email, member.email)),
  }));
  if (issues) {
    const members = (current.members ?? []).filter((m) => m !== member);
    const problems = issues.map((issue) => describeIssue(issue, { ...current, members }));
    return sendPage(reply, await membersPage(ctx, session, { problems }), 422);
  }
  return redirectWithNotice(reply, '/app/admin/members', 'removed');
}

export function memberPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/admin/members', ADMIN, async (request, reply) => {
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    return sendPage(reply, await membersPage(ctx, request.appSession!, { notice }));
  });
  app.post<{ Body: Form }>('/app/admin/members', ADMIN, (request, reply) => saveMember(ctx, request, reply));
  // The edit form's address before members had URLs of their own.
  app.get<{ Querystring: { email?: string } }>('/app/admin/members/edit', ADMIN, (request, reply) =>
    reply.redirect(memberPath(request.query.email ?? ''), 301),
  );
  app.get<{ Params: { email: string } }>('/app/admin/members/:email', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const config = await currentConfig(ctx, session);
    const member = config.members?.find((m) => sameEmail(m.email, emailIn(request)));
    if (!member) return noSuchMember(reply, session);
    const form = { config, version: config.version, values: memberValuesOf(member), errors: {} };
    return sendPage(reply, await editPage(ctx, session, form));
  });
  app.post<{ Params: { email: string }; Body: Form }>('/app/admin/members/:email', ADMIN, (request, reply) =>
    saveMember(ctx, request, reply, emailIn(request)),
  );
  app.post<{ Params: { email: string }; Body: Form }>(
    '/app/admin/members/:email/invite',
    ADMIN,
    (request, reply) => inviteMember(ctx, request, reply),
  );
  app.post<{ Params: { email: string }; Body: Form }>(
    '/app/admin/members/:email/delete',
    ADMIN,
    (request, reply) => removeMember(ctx, request, reply),
  );
}
