/**
 * The approver's desk: the holds waiting for me as a compact list (filters and paging in the URL) with
 * the selected one in full beside it; a hold's own page; deciding; what changed since a page was drawn
 * (the live updates mark it in place); live events.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import type { ServiceContext } from '../../services/context.ts';
import { claimsOf } from '../../services/claims.ts';
import { decideHold } from '../../services/decide-hold.ts';
import { editableOf } from '../../services/decision-changes.ts';
import { ServiceError } from '../../services/errors.ts';
import { followUpLog } from '../../services/follow-up-log.ts';
import { delegatedFor, fourEyesOf, submissionFacts } from '../../services/hold-context.ts';
import { holdDetail, inboxChanges, inboxPage, waitingIdsOf } from '../../services/inbox.ts';
import { passkeyPrompt } from '../../services/passkeys.ts';
import { getHold } from '../../services/read-hold.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { appPath } from '../app-path.ts';
import { holdArguments, TOO_LARGE_TO_APPROVE } from '../views/hold.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { blockerInWords } from '../views/four-eyes.ts';
import { holdPanelView } from '../views/hold-panel.ts';
import { formChanges } from '../forms/changes.ts';
import { sendChangeChallenge } from './change-challenge.ts';
import { DECISION_NOTICES, deskView, holdPageView, leftInWords, notDecidedView } from '../views/inbox.ts';
import { inboxActions } from './inbox-actions.ts';
import { inboxNoticeText } from '../views/bulk-confirm.ts';
import { inboxEvents } from './inbox-events.ts';
import { redirectWithNotice, takeNotice } from '../flash.ts';
import { filtersOf, inboxHref, parseInboxUrl, withQuery } from './inbox-url.ts';
import { FROZEN_APPROVAL } from '../../domain/freeze.ts';

/** The decision form: where to return is a path of the app (anything else returns to the inbox). */
const DecideForm = z.object({
  // `approve_changed`: Approve with changes, the boxes `change.<path>` read (forms/changes.ts).
  verdict: z.enum(['approve', 'approve_changed', 'reject']),
  comment: z.string(),
  back: z.string().transform((value) => appPath(value) ?? '/app/inbox'),
  next: z.string().transform((value) => (HOLD_REFERENCE_PATTERN.test(value) ? value : null)),
});

/** A service call's answer, or null when the service refused it (no such hold, not this workspace's). */
const orNull = <T>(call: Promise<T>): Promise<T | null> =>
  call.catch((error: unknown) => {
    if (error instanceof ServiceError) return null;
    throw error;
  });

/** The selected hold in full, or null when it is not of this workspace. */
async function panelOf(
  ctx: ServiceContext,
  session: AppSession,
  id: string,
  back: string,
  next: string | null,
) {
  const detail = await orNull(holdDetail(ctx, session.workspace.id, id));
  if (!detail) return null;
  const { hold } = detail;
  const [facts, fourEyes, followUps, delegated, claims] = await Promise.all([
    submissionFacts(ctx, hold),
    fourEyesOf(ctx, hold, session.member),
    followUpLog(ctx, hold),
    delegatedFor(ctx, session.member, [hold]),
    claimsOf(ctx, session.workspace.id, [hold.id]),
  ]);
  const delegation = delegated.get(hold.id) ?? null;
  const passkey = await passkeyPrompt(ctx, hold, session.member);
  const claim = claims.get(hold.id) ?? null;
  const editable = await editableOf(ctx.db, hold);
  return {
    title: hold.toolName,
    view: holdPanelView({
      hold,
      facts,
      fourEyes,
      followUps,
      delegation,
      session,
      back,
      next,
      passkey,
      claim,
      editable,
    }),
  };
}

/** A problem page whose header still counts what waits for the member. */
async function problemWithCount(
  ctx: ServiceContext,
  reply: FastifyReply,
  session: AppSession,
  status: number,
  title: string,
  message: string,
) {
  const pending = (await waitingIdsOf(ctx, session.member)).length;
  return sendPage(reply, layout({ title, session, pending }, notDecidedView(title, message)), status);
}

function deskPages(app: FastifyInstance, ctx: ServiceContext) {
  app.get('/app/inbox', async (request, reply) => {
    const session = request.appSession!;
    const parsed = parseInboxUrl(request.query);
    if ('problem' in parsed) return problemPage(reply, 400, 'Not understood', parsed.problem, session);
    const { url } = parsed;
    const drawnAt = ctx.now();
    const page = await inboxPage(ctx, session.member, {
      filters: filtersOf(url),
      order: url.order ?? 'deadline',
      page: Number(url.page ?? 1),
    });
    const { lines } = page;
    const chosen = url.hold ?? lines[0]?.id ?? null;
    const index = lines.findIndex((line) => line.id === chosen);
    // After a decision the next line is selected, or the one before when it was the last.
    const next = index < 0 ? null : ((lines[index + 1] ?? lines[index - 1] ?? null)?.id ?? null);
    const back = inboxHref(url, { hold: undefined });
    const [panel, claims] = await Promise.all([
      chosen === null ? null : panelOf(ctx, session, chosen, back, next),
      claimsOf(
        ctx,
        session.workspace.id,
        lines.map((line) => line.id),
      ),
    ]);
    const body = deskView(
      { url, page, chosen, session, claims, publicUrl: ctx.publicUrl },
      panel?.view ?? null,
      drawnAt,
    );
    const notice = inboxNoticeText(takeNotice(request, reply), DECISION_NOTICES);
    return sendPage(
      reply,
      layout({ title: 'Inbox', session, active: 'inbox', pending: page.waiting, notice }, body),
    );
  });

  // What changed since a page was drawn: the live updates of the inbox and of a hold's page.
  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/app/inbox/changes',
    async (request, reply) => {
      const { shown = '', since = '', ...rest } = request.query;
      const parsed = parseInboxUrl(rest);
      const ids = shown.split(',').filter((id) => HOLD_REFERENCE_PATTERN.test(id));
      if ('problem' in parsed || ids.length > 200 || !/^\d{1,16}$/.test(since)) {
        return reply.code(400).send({ error: 'not_understood' });
      }
      const member = request.appSession!.member;
      const changes = await inboxChanges(ctx, member, ids, filtersOf(parsed.url), Number(since));
      return reply.header('Cache-Control', 'no-store').send({
        waiting: changes.waiting,
        arrived: changes.arrived,
        due_sooner: changes.dueSooner,
        left: changes.left.map((left) => ({ id: left.id, status: left.status, note: leftInWords(left) })),
        approvals: changes.approvals
          .filter((progress) => progress.required > 1)
          .map((progress) => ({ ...progress, names: progress.names.join(', ') })),
      });
    },
  );
}

function holdPages(app: FastifyInstance, ctx: ServiceContext) {
  app.get<{ Params: { id: string } }>('/app/holds/:id', async (request, reply) => {
    const session = request.appSession!;
    const id = request.params.id;
    const panel = HOLD_REFERENCE_PATTERN.test(id)
      ? await panelOf(ctx, session, id, `/app/holds/${id}`, null)
      : null;
    if (!panel) return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    const notice = inboxNoticeText(takeNotice(request, reply), DECISION_NOTICES);
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    const body = holdPageView(panel.view, ctx.now());
    return sendPage(reply, layout({ title: panel.title, session, active: 'inbox', pending, notice }, body));
  });

  app.get<{ Params: { id: string } }>('/app/holds/:id/arguments.json', async (request, reply) => {
    const session = request.appSession!;
    const id = request.params.id;
    const detail = HOLD_REFERENCE_PATTERN.test(id)
      ? await orNull(holdDetail(ctx, session.workspace.id, id))
      : null;
    if (!detail) return problemPage(reply, 404, 'Not found', 'No such hold.', session);
    return reply
      .type('application/json; charset=utf-8')
      .header('Content-Disposition', `attachment; filename="${detail.hold.id}-arguments.json"`)
      .header('Cache-Control', 'no-store')
      .header('X-Content-Type-Options', 'nosniff')
      .send(JSON.stringify(detail.hold.arguments, null, 2));
  });

  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/challenge', async (request, reply) => {
    const { id } = request.params;
    const session = request.appSession!;
    const hold = HOLD_REFERENCE_PATTERN.test(id)
      ? await orNull(getHold(ctx, session.workspace.id, id))
      : null;
    if (!hold || session.member.role === 'viewer')
      return reply.code(404).send({ error: 'not_found', message: 'No such hold to approve.' });
    return sendChangeChallenge(ctx, reply, hold, request.body);
  });
  // A script that asks for JSON decides without a page load: the answer says what became of it.
  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/decide', async (request, reply) =>
    decide(ctx, request.appSession!, request.params.id, request.body, {
      reply,
      json: /\bapplication\/json\b/.test(request.headers.accept ?? ''),
    }),
  );
}

async function decide(
  ctx: ServiceContext,
  session: AppSession,
  holdId: string,
  body: Form,
  { reply, json }: { reply: FastifyReply; json: boolean },
) {
  // JSON's `error` is the title in snake case (`not_decided`), unless it is named.
  const refuse = (status: number, title: string, message: string, error?: string) =>
    json
      ? reply.code(status).send({ error: error ?? title.toLowerCase().replaceAll(' ', '_'), message })
      : problemWithCount(ctx, reply, session, status, title, message);
  const form = DecideForm.safeParse({
    verdict: field(body, 'verdict'),
    comment: field(body, 'comment'),
    back: field(body, 'back'),
    next: field(body, 'next'),
  });
  if (!HOLD_REFERENCE_PATTERN.test(holdId) || !form.success)
    return refuse(400, 'Not understood', 'Choose approve or reject.');
  if (session.member.role === 'viewer') return refuse(403, 'Not allowed', 'Viewers do not decide.');
  const { comment, back, next } = form.data;
  const verdict = form.data.verdict === 'reject' ? 'reject' : 'approve';
  let changes: Record<string, unknown> | undefined;
  // The page offered no Approve for a hold it cannot show whole; a form sent anyway is refused.
  if (verdict === 'approve') {
    const shown = await orNull(getHold(ctx, session.workspace.id, holdId));
    if (shown && !holdArguments(shown).complete) return refuse(422, 'Not decided', TOO_LARGE_TO_APPROVE);
    if (shown && form.data.verdict === 'approve_changed') {
      const read = formChanges(body, shown, await editableOf(ctx.db, shown));
      if ('problem' in read) return refuse(422, 'Not decided', read.problem);
      changes = read.changes;
    }
  }
  let result;
  try {
    result = await decideHold(ctx, {
      workspaceId: session.workspace.id,
      holdId,
      memberId: session.member.id,
      verdict,
      comment,
      channel: 'inbox',
      passkey: field(body, 'passkey') || null,
      changes,
      shown: field(body, 'shown') || undefined,
    });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    // An approval that must be signed: the script takes the reader to the hold's page to sign it.
    const unsigned = error.issues.some((issue) => issue.field === 'passkey') ? 'passkey_required' : undefined;
    return refuse(error.code === 'not_found' ? 404 : 422, 'Not decided', error.message, unsigned);
  }
  if (result.outcome === 'own_request')
    return refuse(403, 'Not decided', blockerInWords('own_request', result.hold));
  if (result.outcome === 'not_an_approver')
    return refuse(403, 'Not decided', 'You are not among the approvers of this hold.');
  if (result.outcome === 'frozen') return refuse(409, 'Not approved', FROZEN_APPROVAL);
  // Back where the decision was made, with what became of it; a hold decided meanwhile stays selected.
  const decided = result.outcome === 'closed' || result.outcome === 'already_decided';
  const notice = decided
    ? result.outcome
    : result.hold.status === 'pending'
      ? 'recorded'
      : result.hold.status;
  const select = decided ? holdId : next;
  if (json) {
    const answer = {
      outcome: result.outcome,
      status: result.hold.status,
      notice: DECISION_NOTICES[notice],
      next,
    };
    return reply.header('Cache-Control', 'no-store').send(answer);
  }
  return redirectWithNotice(
    reply,
    withQuery(back, { hold: back.startsWith('/app/inbox') ? select : null }),
    notice,
  );
}

export function inboxPages(app: FastifyInstance, { ctx }: PageDeps) {
  deskPages(app, ctx);
  holdPages(app, ctx);
  inboxEvents(app, ctx);
  inboxActions(app, ctx);
}
