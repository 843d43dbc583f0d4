/**
 * The widget page: how to embed `<approvals-inbox>` in another tool, and a member's embed token
 * for it (short-lived, shown once, only ever the member's own holds).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { embedTokensFor, mintEmbedToken, revokeEmbedToken } from '../../services/channel-decisions.ts';
import type { ServiceContext } from '../../services/context.ts';
import { ServiceError } from '../../services/errors.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { redirectWithNotice, takeNotice } from '../flash.ts';
import { readRevokeForm } from '../forms/widget.ts';
import type { Html } from '../html.ts';
import { layout } from '../layout.ts';
import { type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { madeTokenView, NO_SUCH_TOKEN, widgetView } from '../views/widget.ts';

const NOTICES: Record<string, string> = { revoked: 'The embed token is revoked.' };

async function sendWidget(
  ctx: ServiceContext,
  reply: FastifyReply,
  session: AppSession,
  { above = null as Html | null, notice = null as string | null, status = 200 } = {},
) {
  const tokens = await embedTokensFor(ctx, session.member);
  const pending = (await waitingIdsOf(ctx, session.member)).length;
  const body = widgetView(session, ctx.publicUrl, tokens, above);
  return sendPage(
    reply,
    layout({ title: 'Widget', session, active: 'widget', pending, notice }, body),
    status,
  );
}

/** Revokes an embed token by its hash; false when the member has no such token to revoke. */
async function revoke(ctx: ServiceContext, session: AppSession, tokenHash: string): Promise<boolean> {
  try {
    await revokeEmbedToken(ctx, session.member, tokenHash);
    return true;
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    return false;
  }
}

const viewerRefused = (session: AppSession, reply: FastifyReply) =>
  problemPage(reply, 403, 'Not allowed', 'Viewers do not decide, so they have no widget.', session);

export function widgetPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get('/app/widget', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const notice = NOTICES[takeNotice(request, reply)?.key ?? ''] ?? null;
    return sendWidget(ctx, reply, session, { notice });
  });

  app.post<{ Body: Form }>('/app/widget/tokens/revoke', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const form = readRevokeForm(request.body);
    if (!form.ok || !(await revoke(ctx, session, form.value.token)))
      return sendWidget(ctx, reply, session, { above: NO_SUCH_TOKEN, status: 404 });
    return redirectWithNotice(reply, '/app/widget', 'revoked');
  });

  app.post('/app/widget/token', async (request, reply) => {
    const session = request.appSession!;
    if (session.member.role === 'viewer') return viewerRefused(session, reply);
    const { token, expiresAt } = await mintEmbedToken(ctx, session.member);
    return sendWidget(ctx, reply, session, { above: madeTokenView(token, expiresAt) });
  });
}
