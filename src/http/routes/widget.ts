/**
 * The widget's API and script (`/widget.js`, `/widget/api/...`): an approver's pending holds and
 * their decisions (channel `widget`), from a page of the customer's own tool. Authenticated by an
 * embed token minted in the app (Authorization: Bearer emb_...), so any origin may call it: no
 * cookie is read, and CORS lets the browser through.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { SUMMARY_LENGTH } from '../../channels/messages.ts';
import { HOLD_REFERENCE_PATTERN } from '../../domain/ids.ts';
import { decideFromWidget, memberOfEmbedToken } from '../../services/channel-decisions.ts';
import type { ServiceContext } from '../../services/context.ts';
import { readPath } from '../../domain/rules.ts';
import { editableByRule } from '../../services/decision-changes.ts';
import { waitingSummariesOf } from '../../services/inbox.ts';
import { sendError } from '../../web/errors.ts';
import { limitMember, refuseUnauthenticated } from '../../web/guard.ts';
import type { RateCounter } from '../../web/rate-limiter.ts';
import { FROZEN_APPROVAL } from '../../domain/freeze.ts';

const script = readFileSync(new URL('../../app/static/widget.js', import.meta.url), 'utf8');

/** So the embedding page's script can read how long to wait after a 429. */
const EXPOSED_HEADERS = 'Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset';

function cors(reply: FastifyReply) {
  return reply
    .header('Access-Control-Allow-Origin', '*')
    .header('Access-Control-Allow-Headers', 'authorization, content-type')
    .header('Access-Control-Allow-Methods', 'GET, POST')
    .header('Access-Control-Max-Age', '600')
    .header('Access-Control-Expose-Headers', EXPOSED_HEADERS);
}

/** The widget lists the holds closest to their deadline; the app has the rest. */
const WIDGET_HOLDS = 100;

const bearer = (request: FastifyRequest) => request.headers.authorization?.match(/^Bearer +(\S+) *$/i)?.[1];

/** The submitted value of each editable path the arguments have. */
const editableValues = (args: Record<string, unknown>, editable: string[]) =>
  Object.fromEntries(
    editable.flatMap((path) => {
      const { found, value } = readPath(args, path.split('.'));
      return found ? [[path, value]] : [];
    }),
  );

/** A waiting hold as the widget's JSON shows it. */
function widgetHold(
  ctx: ServiceContext,
  { summary, arguments: args, ...hold }: Awaited<ReturnType<typeof waitingSummariesOf>>[number],
  editableByName: Map<string, string[]>,
) {
  const editable = (hold.ruleName !== null && editableByName.get(hold.ruleName)) || [];
  return {
    id: hold.id,
    connection: hold.connection,
    tool_name: hold.toolName,
    summary: summary.text,
    // Not complete: no Approve or Reject, only a link to review it in full.
    complete: summary.complete,
    // An approver changed the call (four eyes): the summary shows it as submitted; review it on its page.
    changed: hold.changed,
    review_url: `${ctx.publicUrl}/app/holds/${hold.id}`,
    // The arguments an approver may change (`changes` in a decision), and their values as submitted
    // (shown in the summary already): the widget's boxes start from them.
    editable,
    values: summary.complete && args ? editableValues(args, editable) : {},
    agent: hold.agentLabel ?? hold.agentId,
    expires_at: hold.expiresAt === null ? null : new Date(hold.expiresAt).toISOString(),
    approvals_required: hold.approvalsRequired,
    approvals_received: hold.approvalsReceived,
  };
}

/** What is wrong with a decision's body, if anything: the verdict, the comment, the changes. */
function decisionBodyProblem({ verdict, comment, changes }: Record<string, unknown>) {
  if (verdict !== 'approve' && verdict !== 'reject')
    return { field: 'verdict', message: 'must be approve or reject' };
  if (comment !== undefined && comment !== null && typeof comment !== 'string')
    return { field: 'comment', message: 'must be a string' };
  // Approve with changes: argument path → new value, as the rule's `editable` names them.
  if (changes !== undefined && (changes === null || typeof changes !== 'object' || Array.isArray(changes)))
    return { field: 'changes', message: 'must be an object of argument paths and values' };
  return null;
}

export async function widgetRoutes(
  app: FastifyInstance,
  { ctx, counter }: { ctx: ServiceContext; counter: RateCounter },
) {
  /**
   * The token's member; otherwise 401, or 429 once an IP has guessed too often (brute force), or once
   * the member is over their widget quota (WIDGET_RATE_LIMIT, whichever of their embed tokens is used).
   */
  async function memberOf(request: FastifyRequest, reply: FastifyReply) {
    const member = await memberOfEmbedToken(ctx, bearer(request));
    if (!member) {
      await refuseUnauthenticated(counter, ctx, request, reply);
      return undefined;
    }
    if (await limitMember(counter, ctx, reply, member, 'widget')) return member;
    sendError(reply, 429, 'rate_limited');
    return undefined;
  }

  // Every answer, errors included (bad JSON, 401), carries CORS, so a caller sees the real status.
  app.addHook('onRequest', async (request, reply) => {
    if (request.url.startsWith('/widget/api/')) cors(reply);
  });

  app.get('/widget.js', (_request, reply) =>
    reply
      .header('Access-Control-Allow-Origin', '*')
      .header('Cache-Control', 'public, max-age=300')
      .type('text/javascript; charset=utf-8')
      .send(script),
  );

  app.options('/widget/api/*', (_request, reply) => reply.code(204).send());

  app.get('/widget/api/holds', async (request, reply) => {
    const member = await memberOf(request, reply);
    if (!member) return reply;
    const holds = await waitingSummariesOf(ctx, member, SUMMARY_LENGTH.widget, WIDGET_HOLDS);
    const editable = await editableByRule(ctx.db, member.workspaceId);
    return reply.header('Cache-Control', 'no-store').send({
      member: { name: member.name },
      holds: holds.map((hold) => widgetHold(ctx, hold, editable)),
    });
  });

  app.post<{ Params: { id: string }; Body: { verdict?: unknown; comment?: unknown; changes?: unknown } }>(
    '/widget/api/holds/:id/decision',
    async (request, reply) => {
      const member = await memberOf(request, reply);
      if (!member) return reply;
      const { verdict, comment, changes } = request.body ?? {};
      const problem = decisionBodyProblem(request.body ?? {});
      if (problem)
        return sendError(reply, 422, 'validation_failed', {
          detail: `${problem.field}: ${problem.message}`,
          issues: [problem],
        });
      if (!HOLD_REFERENCE_PATTERN.test(request.params.id)) return sendError(reply, 404, 'not_found');
      const result = await decideFromWidget(ctx, member, {
        holdId: request.params.id,
        // As decisionBodyProblem checked.
        verdict: verdict as 'approve' | 'reject',
        comment: (comment as string | null | undefined) ?? null,
        ...(changes !== undefined && { changes: changes as Record<string, unknown> }),
      });
      if (result.outcome === 'review_required') return sendError(reply, 403, 'review_required');
      // A passkey cannot sign from another site's page: the member approves on the hold's own page.
      if (result.outcome === 'passkey_required')
        return sendError(reply, 403, 'passkey_required', {
          detail: 'This approval must be signed with your passkey: approve it on its page.',
          review_url: `${ctx.publicUrl}/app/holds/${request.params.id}`,
        });
      if (result.outcome === 'not_an_approver' || result.outcome === 'own_request')
        return sendError(reply, 404, 'not_found');
      if (result.outcome === 'frozen')
        return sendError(reply, 409, 'workspace_frozen', { detail: FROZEN_APPROVAL });
      return reply.send({ outcome: result.outcome, status: result.hold.status });
    },
  );
}
