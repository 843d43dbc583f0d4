/**
 * `/d/<token>` (decisions.md): the page an e-mail, SMS or Slack link opens. GET shows the action in
 * full, why it waits and who decides, under the workspace's name and branding; only POST decides.
 * Single-use, bound to one member and one hold, dead at the deadline.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Hold } from '../../domain/hold.ts';
import type { ServiceContext } from '../../services/context.ts';
import { editableOf } from '../../services/decision-changes.ts';
import { decideByLink, type LinkState, openDecisionLink } from '../../services/decision-links.ts';
import { ServiceError } from '../../services/errors.ts';
import { fourEyesOf, submissionFacts } from '../../services/hold-context.ts';
import { waitingIdsOf } from '../../services/inbox.ts';
import { passkeyPrompt } from '../../services/passkeys.ts';
import type { Html } from '../html.ts';
import { holdArguments, TOO_LARGE_TO_APPROVE } from '../views/hold.ts';
import { validTry, mayTry } from '../guesses.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import {
  askTop,
  closedTop,
  decidedTop,
  decisionForm,
  linkPageView,
  notDecidedNotice,
  onwardView,
} from '../views/decision-link.ts';
import { blockerInWords } from '../views/four-eyes.ts';
import { changeBoxes } from '../views/changes.ts';
import { formChanges } from '../forms/changes.ts';
import { sendChangeChallenge } from './change-challenge.ts';
import { FROZEN_APPROVAL } from '../../domain/freeze.ts';

type UsableLink = Exclude<LinkState, { state: 'invalid' }>;
type TokenRequest = FastifyRequest<{ Params: { token: string } }>;

const ALREADY = 'Already decided';

const invalid = (reply: FastifyReply) =>
  problemPage(
    reply,
    404,
    'Link not valid',
    'This decision link is not valid. Open the request in the app instead.',
  );

/** The link of the request, or null once a refusal was sent (over quota, invalid, someone else's). */
async function usableLink(
  deps: PageDeps,
  request: TokenRequest,
  reply: FastifyReply,
): Promise<UsableLink | null> {
  if (!(await mayTry(deps, request, reply))) return null;
  const link = await openDecisionLink(deps.ctx, request.params.token);
  // Only an unknown token is a failed guess: a used or expired link is real and shows its outcome.
  if (link.state !== 'invalid') await validTry(deps, request);
  // Signed in to another workspace: the link is as unknown there as any of its objects.
  const session = request.appSession;
  if (link.state === 'invalid' || (session && session.workspace.id !== link.member.workspaceId)) {
    await invalid(reply);
    return null;
  }
  // Someone signed in as another member of the workspace must not use this member's link.
  if (session && session.member.id !== link.member.id) {
    await problemPage(reply, 403, 'Not your link', 'This link was sent to another member.', session);
    return null;
  }
  return link;
}

/** A link page's heading (a title, a heading and perhaps a comment), its status and notice. */
type LinkView = { title: string; top: Html; status?: number; notice?: string | null };

/** The link member's next waiting hold besides `holdId` (soonest deadline first), and how many wait. */
async function nextWaiting(ctx: ServiceContext, member: UsableLink['member'], holdId: string) {
  // The ids alone, in the inbox's deadline order: no line of the list is drawn for one link.
  const others = (await waitingIdsOf(ctx, member)).filter((id) => id !== holdId);
  return { next: others.length > 0 ? { id: others[0]! } : null, waiting: others.length };
}

/**
 * The link's page for `hold`, the hold in full under a heading. While the link's member may still
 * answer, `ask` (the question and the form, and why they cannot decide, if so). Otherwise
 * `settled`, which says what became of it, with the way on: the member's next waiting hold, the inbox.
 */
async function sendLinkPage(
  ctx: ServiceContext,
  reply: FastifyReply,
  { token, link, hold }: { token: string; link: UsableLink; hold: Hold },
  settled: LinkView,
  ask?: LinkView & { form: Html },
) {
  const [facts, fourEyes] = await Promise.all([
    submissionFacts(ctx, hold),
    fourEyesOf(ctx, hold, link.member),
  ]);
  // A member who answered already (in the app, say) is not asked again.
  const asking = ask && fourEyes.blocker !== 'already_decided' ? ask : null;
  const onward = asking ? null : onwardView(await nextWaiting(ctx, link.member, hold.id));
  const { title, top, status = 200, notice = null } = asking ?? settled;
  const shown = holdArguments(hold, { facts, fullJsonHref: `/d/${token}/arguments.json` });
  const body = linkPageView(
    { token, hold, facts, fourEyes, shown, reader: asking !== null, form: asking?.form ?? null, onward },
    top,
  );
  const page = layout({ title, brand: link.workspace, timeZone: link.member.timeZone, notice }, body);
  return sendPage(reply, page, status);
}

/** Decides through the link, and answers with what became of it. */
async function decide(
  ctx: ServiceContext,
  request: TokenRequest & { body: Form },
  reply: FastifyReply,
  link: UsableLink,
) {
  const { token } = request.params;
  const sent = field(request.body, 'verdict');
  if (sent !== 'approve' && sent !== 'approve_changed' && sent !== 'reject')
    return problemPage(reply, 400, 'Not understood', 'Choose approve or reject.');
  const verdict = sent === 'reject' ? 'reject' : 'approve';
  // The page offered no Approve for a hold it cannot show whole; a form sent anyway is refused.
  if (verdict === 'approve' && !holdArguments(link.hold).complete)
    return problemPage(reply, 422, 'Not decided', TOO_LARGE_TO_APPROVE);
  const comment = field(request.body, 'comment');
  let changes: Record<string, unknown> | undefined;
  if (sent === 'approve_changed') {
    const read = formChanges(request.body, link.hold, await editableOf(ctx.db, link.hold));
    if ('problem' in read) return problemPage(reply, 422, 'Not decided', read.problem);
    changes = read.changes;
  }
  let result;
  try {
    result = await decideByLink(ctx, token, {
      verdict,
      comment,
      passkey: field(request.body, 'passkey') || null,
      changes,
      shown: field(request.body, 'shown') || undefined,
    });
  } catch (error) {
    if (error instanceof ServiceError) return problemPage(reply, 422, 'Not decided', error.message);
    throw error;
  }
  switch (result.outcome) {
    case 'invalid':
      return invalid(reply);
    case 'not_an_approver':
      return problemPage(
        reply,
        403,
        'Not an approver',
        'You are no longer among the approvers of this action.',
      );
    case 'own_request':
      return problemPage(reply, 403, 'Not yours to decide', blockerInWords('own_request', result.hold));
    case 'frozen':
      // The link is not used up: it approves once an admin unfreezes the workspace.
      return problemPage(reply, 409, 'Not approved', FROZEN_APPROVAL);
    case 'used':
    case 'already_decided':
    case 'closed': {
      // Nothing decided: back to the link's page as it stands now, saying why.
      const hold = result.outcome === 'used' ? link.hold : result.hold;
      const notice = notDecidedNotice(result.outcome, hold);
      return sendLinkPage(
        ctx,
        reply,
        { token, link, hold },
        { title: ALREADY, top: closedTop(hold), status: 409, notice },
      );
    }
  }
  const top = decidedTop(verdict, result.hold, comment);
  return sendLinkPage(ctx, reply, { token, link, hold: result.hold }, { title: 'Decided', top });
}

/** The link's form; Approve with changes where the rule offers it. */
async function linkForm(ctx: ServiceContext, token: string, hold: Hold, member: UsableLink['member']) {
  const passkey = await passkeyPrompt(ctx, hold, member);
  return decisionForm(token, hold, passkey, changeBoxes(hold, await editableOf(ctx.db, hold)));
}

export function decisionLinkPages(app: FastifyInstance, deps: PageDeps) {
  const { ctx } = deps;
  const config = { config: { public: true } };

  app.get<{ Params: { token: string } }>('/d/:token', config, async (request, reply) => {
    const link = await usableLink(deps, request, reply);
    if (!link) return reply;
    const { token } = request.params;
    const { hold } = link;
    const settled = { title: ALREADY, top: closedTop(hold) };
    if (link.state === 'closed') return sendLinkPage(ctx, reply, { token, link, hold }, settled);
    return sendLinkPage(ctx, reply, { token, link, hold }, settled, {
      title: `Approve ${hold.toolName}?`,
      top: askTop(hold, link.member.name),
      form: await linkForm(ctx, token, hold, link.member),
    });
  });

  // The full arguments, for a hold too large to show whole on the page: no decision on a part of it.
  app.get<{ Params: { token: string } }>('/d/:token/arguments.json', config, async (request, reply) => {
    const link = await usableLink(deps, request, reply);
    if (!link) return reply;
    return reply
      .headers({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
      .header('Content-Disposition', `attachment; filename="${link.hold.id}-arguments.json"`)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(link.hold.arguments, null, 2));
  });

  app.post<{ Params: { token: string }; Body: Form }>(
    '/d/:token/challenge',
    config,
    async (request, reply) => {
      const link = await usableLink(deps, request, reply);
      if (!link) return reply;
      return sendChangeChallenge(ctx, reply, link.hold, request.body);
    },
  );

  app.post<{ Params: { token: string }; Body: Form }>('/d/:token', config, async (request, reply) => {
    const link = await usableLink(deps, request, reply);
    if (!link) return reply;
    return decide(ctx, request, reply, link);
  });
}
