/**
 * `/d/<token>` (decisions.md): the page an e-mail, SMS or Slack link opens. GET shows the action in
 * full, why it waits and who decides, under the workspace's name and branding; only POST decides.
 * Single-use, bound to one member and one hold, dead at the deadline.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Hold } from '../../domain/hold.ts';
import { decideByLink, type LinkState, openDecisionLink } from '../../services/decision-links.ts';
import { ServiceError } from '../../services/errors.ts';
import { passkeyPrompt } from '../../services/passkeys.ts';
import { fourEyesOf, submissionFacts } from '../../services/hold-context.ts';
import { type Html, html } from '../html.ts';
import { approveWithheld, holdArguments, holdFacts, TOO_LARGE_TO_APPROVE } from '../hold-view.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../respond.ts';
import { conditionsView } from '../views/conditions.ts';
import { passkeyField } from '../views/passkey.ts';
import { blockerInWords, decidedInWords, fourEyesView } from '../views/four-eyes.ts';

type UsableLink = Exclude<LinkState, { state: 'invalid' }>;

const OUTCOME: Record<string, string> = {
  approved: 'This action was approved.',
  rejected: 'This action was rejected.',
  expired: 'This request expired without a decision.',
  pending: 'You have already answered; the action waits for other approvers.',
  executed: 'This action was approved and carried out.',
  failed: 'This action was approved; carrying it out failed.',
  auto_allowed: 'This action was allowed by policy.',
};

/** Why a decision sent through the link changed nothing, said on the link's page. */
const NOT_DECIDED: Record<'used' | 'already_decided', string> = {
  used: 'Not decided: you have answered through this link already.',
  already_decided: 'Not decided: you have decided this action already; each member counts once.',
};
const closedBefore = (hold: Hold) =>
  `Not decided: this action ${hold.status === 'expired' ? 'expired' : `was ${hold.status.replace('_', ' ')}`} before your answer.`;

/** Someone signed in as another member of the workspace must not use this member's link. */
function foreignSession(request: FastifyRequest, link: LinkState) {
  const session = request.appSession;
  return !!session && link.state !== 'invalid' && session.member.id !== link.member.id;
}

export function decisionLinkPages(app: FastifyInstance, { ctx, limitAnonymous }: PageDeps) {
  const config = { config: { public: true } };
  const invalid = (reply: FastifyReply) =>
    problemPage(
      reply,
      404,
      'Link not valid',
      'This decision link is not valid. Open the request in the app instead.',
    );

  /** The link of the request, or null once a refusal was sent (over quota, invalid, someone else's). */
  async function usableLink(
    request: FastifyRequest<{ Params: { token: string } }>,
    reply: FastifyReply,
  ): Promise<UsableLink | null> {
    if (!(await limitAnonymous(request, reply))) return null;
    const link = await openDecisionLink(ctx, request.params.token);
    // Signed in to another workspace: the link is as unknown there as any of its objects.
    const session = request.appSession;
    if (link.state === 'invalid' || (session && session.workspace.id !== link.member.workspaceId)) {
      await invalid(reply);
      return null;
    }
    if (foreignSession(request, link)) {
      await problemPage(
        reply,
        403,
        'Not your link',
        'This link was sent to another member.',
        request.appSession,
      );
      return null;
    }
    return link;
  }

  /**
   * The link's page: `top` (a heading, a comment), then why the hold waits, who decided and who still
   * can, the action in full, and last the `form`: the whole action is seen before the buttons.
   * `reader` shows why the link's member cannot decide, if so.
   */
  async function linkPage(
    reply: FastifyReply,
    token: string,
    link: UsableLink,
    hold: Hold,
    title: string,
    top: Html,
    { status = 200, notice = null as string | null, reader = false, form = null as Html | null } = {},
  ) {
    const [facts, fourEyes] = await Promise.all([
      submissionFacts(ctx, hold),
      fourEyesOf(ctx, hold, link.member),
    ]);
    const fullJsonHref = `/d/${token}/arguments.json`;
    const shown = holdArguments(hold, { facts, fullJsonHref });
    return sendPage(
      reply,
      layout(
        { title, brand: link.workspace, notice },
        html`<div class="narrow card decision-link">
          ${top} ${conditionsView(facts, hold.ruleName)}
          ${fourEyesView({ hold, ...fourEyes, blocker: reader ? fourEyes.blocker : null })}
          ${holdFacts(hold, { withTool: true, facts, fullJsonHref, shown })}
          ${form && !shown.complete ? rejectOnly(token, fullJsonHref) : form}
        </div>`,
      ),
      status,
    );
  }

  /** The form for a hold too large to show whole: no Approve beside a value nobody can see. */
  const rejectOnly = (token: string, fullJsonHref: string) =>
    html`<form method="post" action="/d/${token}" class="decide">
      ${approveWithheld(fullJsonHref)}
      <label for="comment">Comment (optional)</label
      ><textarea id="comment" name="comment" maxlength="2000"></textarea>
      <div class="buttons">
        <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
      </div>
    </form>`;

  const ALREADY = 'Already decided';
  const closedTop = (hold: Hold) => html`<h1>${OUTCOME[hold.status]}</h1>`;

  app.get<{ Params: { token: string } }>('/d/:token', config, async (request, reply) => {
    const link = await usableLink(request, reply);
    if (!link) return reply;
    if (link.state === 'closed')
      return linkPage(reply, request.params.token, link, link.hold, ALREADY, closedTop(link.hold));
    const { hold } = link;
    return linkPage(
      reply,
      request.params.token,
      link,
      hold,
      `Approve ${hold.toolName}?`,
      html`<h1>Approve this action?</h1>
        <p>
          <strong>${hold.agentLabel ?? hold.agentId}</strong> asks to run <strong>${hold.toolName}</strong> on
          ${hold.connection}.
          <span class="muted">For ${link.member.name}. Opening this page decides nothing.</span>
        </p>`,
      {
        reader: true,
        form: html`<form method="post" action="/d/${request.params.token}" class="decide">
          <label for="comment">Comment (optional)</label
          ><textarea id="comment" name="comment" maxlength="2000"></textarea>
          ${passkeyField(await passkeyPrompt(ctx, hold, link.member))}
          <div class="buttons">
            <button type="submit" name="verdict" value="approve" class="approve">Approve</button>
            <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
          </div>
        </form>`,
      },
    );
  });

  // The full arguments, for a hold too large to show whole on the page: no decision on a part of it.
  app.get<{ Params: { token: string } }>('/d/:token/arguments.json', config, async (request, reply) => {
    const link = await usableLink(request, reply);
    if (!link) return reply;
    return reply
      .headers({ 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' })
      .header('Content-Disposition', `attachment; filename="${link.hold.id}-arguments.json"`)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(link.hold.arguments, null, 2));
  });

  app.post<{ Params: { token: string }; Body: Form }>('/d/:token', config, async (request, reply) => {
    const link = await usableLink(request, reply);
    if (!link) return reply;
    const verdict = field(request.body, 'verdict');
    if (verdict !== 'approve' && verdict !== 'reject')
      return problemPage(reply, 400, 'Not understood', 'Choose approve or reject.');
    // The page offered no Approve for a hold it cannot show whole; a form sent anyway is refused.
    if (verdict === 'approve' && !holdArguments(link.hold).complete)
      return problemPage(reply, 422, 'Not decided', TOO_LARGE_TO_APPROVE);
    const comment = field(request.body, 'comment');
    let result;
    try {
      result = await decideByLink(ctx, request.params.token, {
        verdict,
        comment,
        passkey: field(request.body, 'passkey') || null,
      });
    } catch (error) {
      if (error instanceof ServiceError) return problemPage(reply, 422, 'Not decided', error.message);
      throw error;
    }
    if (result.outcome === 'invalid') return invalid(reply);
    if (result.outcome === 'not_an_approver') {
      return problemPage(
        reply,
        403,
        'Not an approver',
        'You are no longer among the approvers of this action.',
      );
    }
    if (result.outcome === 'own_request') {
      return problemPage(reply, 403, 'Not yours to decide', blockerInWords('own_request', result.hold));
    }
    // Nothing decided: back to the link's page as it stands now, saying why.
    if (result.outcome === 'used' || result.outcome === 'already_decided' || result.outcome === 'closed') {
      const hold = result.outcome === 'used' ? link.hold : result.hold;
      const notice = result.outcome === 'closed' ? closedBefore(hold) : NOT_DECIDED[result.outcome];
      return linkPage(reply, request.params.token, link, hold, ALREADY, closedTop(hold), {
        status: 409,
        notice,
      });
    }
    return linkPage(
      reply,
      request.params.token,
      link,
      result.hold,
      'Decided',
      html`<div role="status">
        <h1>${decidedInWords(verdict, result.hold)}</h1>
        ${
          comment
            ? html`<p>Your comment:</p>
                <blockquote class="comment">${comment}</blockquote>`
            : null
        }
      </div>`,
    );
  });
}
