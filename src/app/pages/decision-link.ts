/**
 * `/d/<token>` (decisions.md): the page an e-mail, SMS or Slack link opens. GET shows the action and
 * a form; only POST decides. Single-use, bound to one member and one hold, dead at the deadline.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Hold } from '../../domain/hold.ts';
import { decideByLink, type LinkState, openDecisionLink } from '../../services/decision-links.ts';
import { ServiceError } from '../../services/errors.ts';
import { html } from '../html.ts';
import { holdFacts } from '../hold-view.ts';
import { layout } from '../layout.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../plugin.ts';

const summary = (hold: Hold) => holdFacts(hold, { withTool: true });

const OUTCOME: Record<string, string> = {
  approved: 'This action was approved.',
  rejected: 'This action was rejected.',
  expired: 'This request expired without a decision.',
  pending: 'You have already answered; the action waits for other approvers.',
  executed: 'This action was approved and carried out.',
  failed: 'This action was approved; carrying it out failed.',
  auto_allowed: 'This action was allowed by policy.',
};

function closedPage(reply: FastifyReply, hold: Hold, status = 200) {
  return sendPage(
    reply,
    layout(
      { title: 'Already decided' },
      html`<div class="narrow card">
        <h1>${OUTCOME[hold.status]}</h1>
        ${summary(hold)}
      </div>`,
    ),
    status,
  );
}

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
  async function usableLink(request: FastifyRequest<{ Params: { token: string } }>, reply: FastifyReply) {
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

  app.get<{ Params: { token: string } }>('/d/:token', config, async (request, reply) => {
    const link = await usableLink(request, reply);
    if (!link) return reply;
    if (link.state === 'closed') return closedPage(reply, link.hold);
    return sendPage(
      reply,
      layout(
        { title: `Approve ${link.hold.toolName}?` },
        html`<div class="narrow card">
          <h1>Approve this action?</h1>
          <p class="muted">For ${link.member.name}. Opening this page decides nothing.</p>
          ${summary(link.hold)}
          <form method="post" action="/d/${request.params.token}" class="decide">
            <label for="comment">Comment (optional)</label
            ><textarea id="comment" name="comment" maxlength="2000"></textarea>
            <div class="buttons">
              <button type="submit" name="verdict" value="approve" class="approve">Approve</button>
              <button type="submit" name="verdict" value="reject" class="reject">Reject</button>
            </div>
          </form>
        </div>`,
      ),
    );
  });

  app.post<{ Params: { token: string }; Body: Form }>('/d/:token', config, async (request, reply) => {
    if (!(await usableLink(request, reply))) return reply;
    const verdict = field(request.body, 'verdict');
    if (verdict !== 'approve' && verdict !== 'reject')
      return problemPage(reply, 400, 'Not understood', 'Choose approve or reject.');
    let result;
    try {
      result = await decideByLink(ctx, request.params.token, {
        verdict,
        comment: field(request.body, 'comment'),
      });
    } catch (error) {
      if (error instanceof ServiceError) return problemPage(reply, 422, 'Not decided', error.message);
      throw error;
    }
    if (result.outcome === 'invalid') return invalid(reply);
    if (result.outcome === 'used' || result.outcome === 'already_decided') {
      return problemPage(reply, 409, 'Already used', 'This link has been used already.');
    }
    if (result.outcome === 'not_an_approver') {
      return problemPage(
        reply,
        403,
        'Not an approver',
        'You are no longer among the approvers of this action.',
      );
    }
    return closedPage(reply, result.hold, result.outcome === 'closed' ? 409 : 200);
  });
}
