/**
 * Callbacks from Slack and the SMS provider. Each checks the provider's signature before anything
 * else (Slack: v0, five minutes; SMS: X-Twilio-Signature over PUBLIC_URL + path and the form), then
 * hands the decision to the service. Unconfigured channels answer 404.
 */
import type { FastifyInstance } from 'fastify';
import { verifySlackSignature } from '../../channels/slack.ts';
import { verifyTwilioSignature } from '../../channels/sms.ts';
import { invokeAnswer, readTeamsAction } from '../../channels/teams.ts';
import {
  type ChannelDecision,
  decideFromSlack,
  decideFromSms,
  decideFromTeams,
} from '../../services/channel-decisions.ts';
import type { ServiceContext } from '../../services/context.ts';
import { sendError } from '../../web/errors.ts';
import { FROZEN_APPROVAL } from '../../domain/freeze.ts';

const FORM_LIMIT = 64 * 1024;

/** The reply a member gets by SMS: what their code did. */
function replyText(result: ChannelDecision): string {
  switch (result.outcome) {
    case 'recorded':
      return result.hold.status === 'pending'
        ? 'Recorded. More approvals are needed.'
        : `Done: ${result.hold.status}.`;
    case 'closed':
    case 'already_decided':
      return `Already decided (${result.hold.status}).`;
    case 'replayed':
      return 'Already received.';
    case 'not_an_approver':
      return 'You are not an approver of this action.';
    case 'own_request':
      return 'An agent that acts for you requested this action: someone else must decide it.';
    case 'review_required':
      return 'This action does not fit in a text: open the link to review it.';
    case 'passkey_required':
      return 'Not approved: this action must be signed with your passkey. Open the link to approve it there.';
    case 'frozen':
      return `Not approved. ${FROZEN_APPROVAL}`;
    default:
      return 'Reply YES or NO with the code from the message, e.g. YES 4821.';
  }
}

/** The answer to a press that changed nothing: an error Teams shows, or a word on a replayed press. */
function teamsAnswer(result: ChannelDecision | { outcome: 'stale' }) {
  switch (result.outcome) {
    case 'replayed':
      return invokeAnswer.message('Already received.');
    case 'stale':
      return invokeAnswer.error(403, 'stale', 'This press is too old: press the button again.');
    case 'review_required':
      return invokeAnswer.error(
        403,
        'review_required',
        'Not every argument fits here: open it to review it in full.',
      );
    case 'own_request':
      return invokeAnswer.error(403, 'own_request', replyText(result));
    case 'frozen':
      return invokeAnswer.error(403, 'workspace_frozen', FROZEN_APPROVAL);
    case 'passkey_required':
      return invokeAnswer.error(
        403,
        'passkey_required',
        'This action must be signed with your passkey: open it to approve it on its page.',
      );
    default:
      return invokeAnswer.error(403, 'forbidden', 'You are not an approver of this action.');
  }
}

const xml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

export async function channelRoutes(app: FastifyInstance, { ctx }: { ctx: ServiceContext }) {
  // Signatures cover the exact bytes: keep the body as it came.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_LIMIT },
    (_request, body, done) => done(null, body),
  );
  slackRoutes(app, ctx);
  teamsRoutes(app, ctx);
  smsRoutes(app, ctx);
}

function slackRoutes(app: FastifyInstance, ctx: ServiceContext) {
  app.post('/slack/interactions', async (request, reply) => {
    const slack = ctx.channels.slack;
    if (!slack) return sendError(reply, 404, 'not_found');
    const raw = typeof request.body === 'string' ? request.body : '';
    const signed = verifySlackSignature(
      slack.signingSecret,
      {
        timestamp: request.headers['x-slack-request-timestamp'],
        signature: request.headers['x-slack-signature'],
      },
      raw,
      ctx.now(),
    );
    if (!signed) return sendError(reply, 401, 'unauthorized');
    // Signed, but still any JSON: null, a number, actions that are not a list.
    let payload: {
      type?: string;
      user?: { id?: unknown };
      actions?: { action_id?: unknown; value?: unknown }[];
    } | null;
    try {
      payload = JSON.parse(new URLSearchParams(raw).get('payload') ?? '');
    } catch {
      return reply.code(400).send();
    }
    if (typeof payload !== 'object' || payload === null) return reply.code(400).send();
    const action = Array.isArray(payload.actions) ? payload.actions[0] : undefined;
    const verdict =
      action?.action_id === 'approve' ? 'approve' : action?.action_id === 'reject' ? 'reject' : null;
    if (
      payload.type === 'block_actions' &&
      verdict &&
      typeof payload.user?.id === 'string' &&
      typeof action?.value === 'string'
    ) {
      await decideFromSlack(ctx, {
        slackUserId: payload.user.id,
        holdId: action.value,
        verdict,
        replayKey: String(request.headers['x-slack-signature']),
      });
    }
    // Slack wants a quick 200; the messages themselves are updated by the notification worker.
    return reply.code(200).send();
  });
}

function teamsRoutes(app: FastifyInstance, ctx: ServiceContext) {
  // The Bot Connector's requests: every one carries its signed token (checked before anything is read).
  app.post('/teams/messages', { bodyLimit: FORM_LIMIT }, async (request, reply) => {
    const teams = ctx.channels.teams;
    if (!teams) return sendError(reply, 404, 'not_found');
    const activity = (typeof request.body === 'object' && request.body) || {};
    let caller;
    try {
      caller = await teams.verifier.verify(request.headers.authorization, activity);
    } catch {
      // The signing keys could not be fetched: the Bot Connector retries.
      return sendError(reply, 503, 'unavailable');
    }
    if (!caller) return sendError(reply, 401, 'unauthorized');
    const action = readTeamsAction(activity);
    // Other activities (the app installed, a message typed to the bot) ask nothing of us.
    if (!action) return reply.code(200).send({});
    const { result, card } = await decideFromTeams(ctx, {
      ...action,
      holdId: action.holdId,
      verdict: action.verb,
    });
    if (card) return reply.code(200).send(invokeAnswer.card(card));
    return reply.code(200).send(teamsAnswer(result));
  });
}

function smsRoutes(app: FastifyInstance, ctx: ServiceContext) {
  app.post('/sms/inbound', async (request, reply) => {
    const sms = ctx.channels.sms;
    if (!sms?.replies) return sendError(reply, 404, 'not_found');
    const params = Object.fromEntries(
      new URLSearchParams(typeof request.body === 'string' ? request.body : ''),
    );
    const signed = verifyTwilioSignature(
      sms.authToken,
      `${ctx.publicUrl}/sms/inbound`,
      params,
      request.headers['x-twilio-signature'],
    );
    if (!signed) return sendError(reply, 403, 'forbidden');
    const result =
      params.From && params.Body && params.MessageSid
        ? await decideFromSms(ctx, { from: params.From, body: params.Body, messageId: params.MessageSid })
        : ({ outcome: 'unknown' } as const);
    return reply
      .type('text/xml; charset=utf-8')
      .send(
        `<?xml version="1.0" encoding="UTF-8"?><Response><Message>${xml(replyText(result))}</Message></Response>`,
      );
  });
}
