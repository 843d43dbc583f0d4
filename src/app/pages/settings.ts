/**
 * Away and quiet hours (`/app/settings`): every member sets their own time zone, quiet hours,
 * out-of-office delegation, and where their approval requests go (phone, Slack and Teams user ids).
 * A save changes only the signed-in member's item of the workspace file, through the same path as the
 * admin pages (`editConfig`: checked, versioned, evidenced as `config.applied` with the delegations it
 * changed, and a `delegation.changed` webhook), as them.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { ServiceContext } from '../../services/context.ts';
import type { FieldIssue } from '../../services/errors.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../flash.ts';
import { awayIssue, type MemberEntry, readAwayForm } from '../forms/away.ts';
import { sameEmail } from '../forms/members.ts';
import { ADDRESS_NAMES, readAddresses, readDigestMinutes } from '../forms/settings.ts';
import { type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { type SettingsDraft, settingsView } from '../views/settings.ts';
import { adminPage, applyChange, currentConfig, describeIssue, readAtOf } from './admin/shared.ts';

/** The page for the signed-in member, or a 404 once they are no longer a member. */
async function sendSettings(
  ctx: ServiceContext,
  reply: FastifyReply,
  session: AppSession,
  { status = 200, notice = null as string | null, draft = {} as SettingsDraft } = {},
) {
  const config = await currentConfig(ctx, session);
  const me = config.members?.find((m) => sameEmail(m.email, session.member.email));
  if (!me)
    return problemPage(reply, 404, 'Not found', 'You are no longer a member of this workspace.', session);
  const body = settingsView(session, config, me, ctx.now(), draft);
  const page = await adminPage(
    ctx,
    session,
    { title: 'Away and quiet hours', active: 'settings', notice },
    body,
  );
  return sendPage(reply, page, status);
}

/**
 * The file's check of the member's own item (at `index` of `members`) in the form's terms: an away or
 * address field's problem beside it, anything else for the page's summary.
 */
function placeIssues(issues: FieldIssue[], index: number, members: MemberEntry[], draft: SettingsDraft) {
  const errors = (draft.errors ??= {});
  const addressErrors = (draft.addressErrors ??= {});
  const problems = (draft.problems ??= []);
  for (const issue of issues) {
    const [part, at, ...path] = issue.field.split('.');
    const mine = part === 'members' && Number(at) === index;
    const own = mine ? awayIssue(path, issue.message) : null;
    const address = mine ? ADDRESS_NAMES.find((name) => name === path[0]) : undefined;
    if (own) errors[own[0]] ??= own[1];
    else if (mine && path[0] === 'digest_minutes') draft.digestError ??= issue.message;
    else if (address) addressErrors[address] ??= issue.message;
    else problems.push(describeIssue(issue, { members }));
  }
}

async function saveSettings(ctx: ServiceContext, session: AppSession, body: Form, reply: FastifyReply) {
  const saved = (await currentConfig(ctx, session)).members?.find((m) =>
    sameEmail(m.email, session.member.email),
  );
  const { values, change, errors } = readAwayForm(body, ctx.now(), saved?.delegate);
  const addresses = readAddresses(body);
  const digest = readDigestMinutes(body);
  // Viewers have no delegation to set.
  if (session.member.role === 'viewer') {
    delete change.delegate;
    delete errors.delegate;
  }
  const draft: SettingsDraft = {
    values,
    errors,
    addresses: addresses?.values,
    digest: digest?.value,
  };
  if (Object.keys(errors).length > 0) return sendSettings(ctx, reply, session, { status: 422, draft });
  // Only the signed-in member's own item changes, whatever else the form carries.
  let index = -1;
  let members: MemberEntry[] = [];
  const issues = await applyChange(ctx, session, readAtOf(body), (now) => {
    members = (now.members ?? []).map((m) =>
      sameEmail(m.email, session.member.email)
        ? { ...m, ...change, ...addresses?.change, ...digest?.change }
        : m,
    );
    index = members.findIndex((m) => sameEmail(m.email, session.member.email));
    return { members };
  });
  if (!issues) return redirectWithNotice(reply, '/app/settings', 'saved');
  placeIssues(issues, index, members, draft);
  return sendSettings(ctx, reply, session, { status: 422, draft });
}

export function settingsPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/settings', async (request, reply) => {
    const notice = takeNotice(request, reply)?.key === 'saved' ? 'Saved.' : null;
    return sendSettings(ctx, reply, request.appSession!, { notice });
  });

  app.post<{ Body: Form }>('/app/settings', async (request, reply) =>
    saveSettings(ctx, request.appSession!, request.body, reply),
  );
}
