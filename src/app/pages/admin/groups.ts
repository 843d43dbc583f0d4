/**
 * Groups, on the Members page: create one (`POST /app/admin/groups`), set its members
 * (`POST /app/admin/groups/<name>`), delete it (`POST /app/admin/groups/<name>/delete`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice } from '../../flash.ts';
import {
  groupValuesOf,
  parseGroupMembersForm,
  parseNewGroupForm,
  type GroupValues,
} from '../../forms/groups.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import { groupPath, type GroupDraft } from '../../views/groups.ts';
import { membersPage } from './members.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  currentConfig,
  describeIssue,
  readAtOf,
  versionPassedOn,
} from './shared.ts';
import { confirmCard } from '../../views/form-fields.ts';

type Ctx = PageDeps['ctx'];
type NameRequest = FastifyRequest<{ Params: { name: string }; Body: Form }>;

const noSuchGroup = (reply: FastifyReply, session: AppSession) =>
  problemPage(reply, 404, 'Not found', 'No such group in this workspace.', session);

/** Saves a new group, or the members of the group `name`; problems show in its form. */
async function saveGroup(
  ctx: Ctx,
  request: FastifyRequest<{ Body: Form }>,
  reply: FastifyReply,
  name?: string,
) {
  const mode: GroupDraft['mode'] = name === undefined ? 'create' : 'edit';
  const session = request.appSession!;
  const current = await currentConfig(ctx, session);
  const existing = Object.keys(current.groups ?? {});
  if (name !== undefined && !existing.includes(name)) return noSuchGroup(reply, session);
  const parsed =
    name === undefined
      ? parseNewGroupForm(request.body, existing)
      : parseGroupMembersForm(request.body, name);
  const refused = async (errors: Record<string, string>, values: GroupValues) =>
    sendPage(reply, await membersPage(ctx, session, { group: { mode, values, errors } }), 422);
  if (!parsed.ok) return refused(parsed.errors, groupValuesOf(request.body, name));
  const group = parsed.value;
  const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
    groups: { ...now.groups, [group.name]: group.members },
  }));
  if (issues) {
    const message = issues.map((issue) => describeIssue(issue, current)).join(' ');
    return refused(mode === 'create' ? { name: message } : { members: message }, group);
  }
  return redirectWithNotice(reply, '/app/admin/members#groups', 'group_saved');
}

async function deleteGroup(ctx: Ctx, request: NameRequest, reply: FastifyReply) {
  const session = request.appSession!;
  const name = request.params.name;
  const current = await currentConfig(ctx, session);
  if (!Object.hasOwn(current.groups ?? {}, name)) return noSuchGroup(reply, session);
  if (field(request.body, 'confirm') !== 'yes') {
    const body = confirmCard(session, {
      title: `Delete group ${name}?`,
      message: 'Its members stay in the workspace. Rules that name this group must be changed first.',
      action: `${groupPath(name)}/delete`,
      fields: versionPassedOn(request.body),
      button: `Delete group ${name}`,
      back: '/app/admin/members#groups',
    });
    return sendPage(reply, await adminPage(ctx, session, { title: 'Delete group', active: 'members' }, body));
  }
  const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
    groups: Object.fromEntries(Object.entries(now.groups ?? {}).filter(([group]) => group !== name)),
  }));
  if (issues) {
    const problems = issues.map((issue) => describeIssue(issue, current));
    return sendPage(reply, await membersPage(ctx, session, { problems }), 422);
  }
  return redirectWithNotice(reply, '/app/admin/members', 'group_deleted');
}

export function groupPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.post<{ Body: Form }>('/app/admin/groups', ADMIN, (request, reply) => saveGroup(ctx, request, reply));
  app.post<{ Params: { name: string }; Body: Form }>('/app/admin/groups/:name', ADMIN, (request, reply) =>
    saveGroup(ctx, request, reply, request.params.name),
  );
  app.post<{ Params: { name: string }; Body: Form }>(
    '/app/admin/groups/:name/delete',
    ADMIN,
    (request, reply) => deleteGroup(ctx, request, reply),
  );
}
