/**
 * The inbox's actions on several holds or on a hold's claim: bulk approve or reject (a confirmation
 * that lists what is decided and its total, then the decisions), and "I'm on it" (claim and release).
 * A claim answers JSON to the list's script (`Accept: application/json`), otherwise a redirect back.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { BULK_LIMIT } from '../../domain/bulk.ts';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { type BulkSelection, bulkDecide, bulkPreview } from '../../services/bulk-decisions.ts';
import { claimHold, type ClaimShown, releaseHold } from '../../services/claims.ts';
import type { ServiceContext } from '../../services/context.ts';
import { MAX_COMMENT } from '../../services/decide-hold.ts';
import { ServiceError } from '../../services/errors.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import type { AppSession } from '../../services/sign-in.ts';
import { appPath } from '../app-path.ts';
import { redirectWithNotice } from '../flash.ts';
import { layout } from '../layout.ts';
import { field, fields, type Form, problemPage, sendPage } from '../respond.ts';
import { bulkChoiceView, bulkConfirmView, skipInWords } from '../views/bulk-confirm.ts';
import { filtersOf, parseInboxUrl, withQuery } from './inbox-url.ts';

const BulkForm = z.object({
  // None: the inbox's "Select all … matching this filter", which asks which first.
  verdict: z.enum(['', 'approve', 'reject']),
  comment: z.string().max(MAX_COMMENT),
  back: z.string().transform((value) => appPath(value) ?? '/app/inbox'),
  step: z.enum(['', 'confirm', 'decide']),
  all: z.enum(['', '1']),
});

const FILTER_FIELDS = ['tool', 'connection', 'agent', 'rule', 'env', 'q'] as const;

/** The holds the form chose: its `hold` fields, or (`all=1`) the inbox's filter fields; or what is wrong. */
function selectionOf(body: Form, all: boolean): BulkSelection | { problem: string } {
  if (all) {
    const parsed = parseInboxUrl(Object.fromEntries(FILTER_FIELDS.map((name) => [name, field(body, name)])));
    return 'problem' in parsed ? parsed : { filters: filtersOf(parsed.url) };
  }
  const holdIds = fields(body, 'hold');
  if (holdIds.length === 0) return { problem: 'Choose at least one hold.' };
  if (holdIds.length > BULK_LIMIT)
    return { problem: `At most ${BULK_LIMIT} holds are decided at once: choose fewer.` };
  if (!holdIds.every((id) => HOLD_REFERENCE_PATTERN.test(id)))
    return { problem: 'A hold is not understood.' };
  return { holdIds };
}

async function bulk(ctx: ServiceContext, request: FastifyRequest<{ Body: Form }>, reply: FastifyReply) {
  const session = request.appSession!;
  const body = request.body;
  const form = BulkForm.safeParse({
    verdict: field(body, 'verdict'),
    comment: field(body, 'comment'),
    back: field(body, 'back'),
    step: field(body, 'step'),
    all: field(body, 'all'),
  });
  if (!form.success) {
    return problemPage(
      reply,
      400,
      'Not understood',
      'Choose approve or reject (a comment of at most 2000 characters).',
      session,
    );
  }
  if (session.member.role === 'viewer')
    return problemPage(reply, 403, 'Not allowed', 'Viewers do not decide.', session);
  const { verdict, comment, back, step, all } = form.data;
  const selection = selectionOf(body, all === '1');
  if ('problem' in selection) return problemPage(reply, 400, 'Not understood', selection.problem, session);
  if (verdict === '') {
    if (step === 'decide')
      return problemPage(reply, 400, 'Not understood', 'Choose approve or reject.', session);
    return choose(ctx, reply, session, body, { selection, back });
  }
  if (step !== 'decide') {
    const preview = await bulkPreview(ctx, session.member, verdict, selection);
    const pending = (await waitingIdsOf(ctx, session.member)).length;
    const title = verdict === 'approve' ? 'Approve holds' : 'Reject holds';
    const page = bulkConfirmView(session, preview, { comment, back });
    return sendPage(reply, layout({ title, session, active: 'inbox', pending }, page));
  }
  // Only holds the confirmation listed are decided (it posts their ids): never a filter, unseen.
  if (!('holdIds' in selection))
    return problemPage(
      reply,
      400,
      'Not understood',
      'Decide from the confirmation, which lists the holds.',
      session,
    );
  const holdIds = selection.holdIds;
  let outcomes;
  try {
    outcomes = await bulkDecide(ctx, {
      workspaceId: session.workspace.id,
      memberId: session.member.id,
      holdIds,
      verdict,
      comment,
    });
  } catch (error) {
    if (!(error instanceof ServiceError)) throw error;
    return problemPage(reply, 422, 'Not decided', error.message, session);
  }
  const decided = outcomes.filter((outcome) => 'status' in outcome).length;
  const left = outcomes.length - decided;
  const key = verdict === 'approve' ? 'bulk_approved' : 'bulk_rejected';
  return redirectWithNotice(reply, back, `${key}:${decided}:${left}`);
}

/** The page that asks approve or reject, re-posting the same choice of holds. */
async function choose(
  ctx: ServiceContext,
  reply: FastifyReply,
  session: AppSession,
  body: Form,
  { selection, back }: { selection: BulkSelection; back: string },
) {
  const { selected } = await bulkPreview(ctx, session.member, 'reject', selection);
  const fields: [string, string][] =
    'holdIds' in selection
      ? selection.holdIds.map((id) => ['hold', id])
      : [['all', '1'], ...FILTER_FIELDS.map((name): [string, string] => [name, field(body, name)])];
  const pending = (await waitingIdsOf(ctx, session.member)).length;
  const page = bulkChoiceView(session, selected, { fields, back });
  return sendPage(reply, layout({ title: 'Decide holds', session, active: 'inbox', pending }, page));
}

const wantsJson = (request: FastifyRequest) => (request.headers.accept ?? '').includes('application/json');
const claimed = (claim: ClaimShown | null) =>
  claim && { claimed: { name: claim.name, until: new Date(claim.until).toISOString() } };

/** Claim or release: JSON for the list's script, otherwise back where the form was, with a notice. */
async function claimAction(
  ctx: ServiceContext,
  action: 'claim' | 'release',
  request: FastifyRequest<{ Params: { id: string }; Body: Form }>,
  reply: FastifyReply,
) {
  const session: AppSession = request.appSession!;
  const id = request.params.id;
  const json = wantsJson(request);
  const answer = (status: number, claim: ClaimShown | null, notice: string, message: string) => {
    if (json)
      return reply
        .code(status)
        .header('Cache-Control', 'no-store')
        .send(claimed(claim) ?? { claimed: null, ...(status >= 400 && { message }) });
    if (status >= 400 && status !== 409) return problemPage(reply, status, 'Not changed', message, session);
    // Back in the inbox, the hold stays selected (on a phone: shown), as one claims it to work on it.
    const back = appPath(field(request.body, 'back')) ?? `/app/holds/${id}`;
    const inbox = back.startsWith('/app/inbox');
    return redirectWithNotice(reply, inbox ? withQuery(back, { hold: id }) : back, notice);
  };
  if (!HOLD_REFERENCE_PATTERN.test(id)) return answer(404, null, '', 'No such hold.');
  if (session.member.role === 'viewer')
    return answer(403, null, '', 'Viewers do not decide, so they do not claim.');
  const input = { workspaceId: session.workspace.id, holdId: id, memberId: session.member.id };
  try {
    if (action === 'release') {
      const result = await releaseHold(ctx, input);
      if (result.outcome === 'not_yours')
        return answer(409, result.claim, 'claim_not_yours', 'Only the member on it or an admin releases it.');
      return answer(200, null, 'released', '');
    }
    const result = await claimHold(ctx, input);
    if (result.outcome === 'claimed') return answer(200, result.claim, 'claimed', '');
    if (result.outcome === 'taken')
      return answer(409, result.claim, 'claim_taken', `${result.claim.name} is on it.`);
    const status = result.blocker === 'closed' || result.blocker === 'already_decided' ? 409 : 403;
    const why = result.blocker === 'viewer' ? 'not_an_approver' : result.blocker;
    return answer(status, null, 'claim_refused', skipInWords(why, { approvalsRequired: 1 }));
  } catch (error) {
    if (!(error instanceof ServiceError) || error.code !== 'not_found') throw error;
    return answer(404, null, '', 'No such hold.');
  }
}

export function inboxActions(app: FastifyInstance, ctx: ServiceContext) {
  app.post<{ Body: Form }>('/app/inbox/bulk', (request, reply) => bulk(ctx, request, reply));
  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/claim', (request, reply) =>
    claimAction(ctx, 'claim', request, reply),
  );
  app.post<{ Params: { id: string }; Body: Form }>('/app/holds/:id/release', (request, reply) =>
    claimAction(ctx, 'release', request, reply),
  );
}
