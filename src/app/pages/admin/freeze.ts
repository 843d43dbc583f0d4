/**
 * Freeze (`/app/admin/freeze`), admins only: the kill switch, as `approvals workspace freeze|unfreeze`
 * and the admin API, each confirmed first.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_FREEZE_REASON } from '../../../domain/freeze.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { freezeWorkspace, unfreezeWorkspace } from '../../../services/freeze.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { field, type Form, type PageDeps, sendPage } from '../../respond.ts';
import { confirmCard } from '../../views/form-fields.ts';
import { FREEZE_PAGE as PAGE, freezeBody, freezeNotice } from '../../views/freeze.ts';
import { ADMIN, adminPage } from './shared.ts';

type Posted = { Body: Form };

const by = (session: AppSession) => `${session.member.name} <${session.member.email}>`;

const mainPage = (ctx: ServiceContext, session: AppSession, notice: string | null, problem: string | null) =>
  adminPage(ctx, session, { title: 'Freeze', active: 'freeze', notice }, freezeBody(session, problem));

const confirmPage = (ctx: ServiceContext, session: AppSession, card: Parameters<typeof confirmCard>[1]) =>
  adminPage(ctx, session, { title: 'Freeze', active: 'freeze' }, confirmCard(session, card));

async function freeze(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  const reason = field(request.body, 'reason');
  if (reason === '' || reason.length > MAX_FREEZE_REASON) {
    const problem = `Give a reason of 1-${MAX_FREEZE_REASON} characters.`;
    return sendPage(reply, await mainPage(ctx, session, null, problem), 422);
  }
  if (field(request.body, 'confirm') !== 'yes') {
    const card = {
      title: 'Freeze the workspace?',
      message: `Every new hold is denied ("The workspace is frozen: ${reason}") , nothing is approved and no approved MCP call runs until an admin unfreezes it.`,
      action: PAGE,
      fields: { reason },
      button: 'Freeze now',
      back: PAGE,
    };
    return sendPage(reply, await confirmPage(ctx, session, card));
  }
  await freezeWorkspace(ctx, session.workspace, { reason, by: by(session) });
  return redirectWithNotice(reply, PAGE, 'frozen');
}

async function unfreeze(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  if (field(request.body, 'confirm') !== 'yes') {
    const card = {
      title: 'Unfreeze the workspace?',
      message: 'Holds are decided by the rules again, and the approved MCP calls that waited run now.',
      action: `${PAGE}/unfreeze`,
      fields: {},
      button: 'Unfreeze now',
      back: PAGE,
    };
    return sendPage(reply, await confirmPage(ctx, session, card));
  }
  await unfreezeWorkspace(ctx, session.workspace, { by: by(session) });
  return redirectWithNotice(reply, PAGE, 'unfrozen');
}

export function freezePages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get(PAGE, ADMIN, async (request, reply) => {
    const notice = freezeNotice(takeNotice(request, reply)?.key);
    return sendPage(reply, await mainPage(ctx, request.appSession!, notice, null));
  });
  app.post<Posted>(PAGE, ADMIN, (request, reply) => freeze(ctx, request, reply));
  app.post<Posted>(`${PAGE}/unfreeze`, ADMIN, (request, reply) => unfreeze(ctx, request, reply));
}
