/**
 * Webhook: the workspace's one endpoint (set, change and remove it through `applyConfig`, like
 * `approvals apply`), its signing secret (made and rotated here, shown once on the page that made it,
 * never again), and the delivery log with its dead letters, which can be sent again.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import type { WorkspaceConfig } from '../../../services/config-file.ts';
import type { ServiceContext } from '../../../services/context.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import {
  deadDeliveries,
  deliveryLog,
  redeliver,
  rotateWebhookSecret,
  ROTATION_OVERLAP_MS,
  sendTestEvent,
  webhookEndpointOf,
  webhookEventOf,
} from '../../../services/webhooks.ts';
import { redirectWithNotice, takeNotice } from '../../flash.ts';
import { attachIssues, type FieldErrors } from '../../forms/form.ts';
import { parseWebhookForm, typedUrl, webhookEntry } from '../../forms/webhook.ts';
import type { Html } from '../../html.ts';
import { field, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import { secretBox } from '../../views/webhook/endpoint.ts';
import { DEAD_COUNTED, DELIVERY_STATES, SHOWN, WEBHOOK_PAGE as PAGE } from '../../views/webhook/log.ts';
import {
  removeQuestion,
  rotatedNote,
  rotateQuestion,
  webhookBody,
  webhookNotice,
} from '../../views/webhook/page.ts';
import { ADMIN, adminPage, applyChange, describeIssue, readAtOf, versionPassedOn } from './shared.ts';
import { confirmCard } from '../../views/form-fields.ts';

const EVENT_ID = /^msg_[A-Za-z0-9_-]{1,60}$/;

const notFound = (reply: FastifyReply, session: AppSession) =>
  problemPage(reply, 404, 'Not found', 'This workspace has no webhook endpoint.', session);

type Posted = { Body: Form };

async function mainPage(
  ctx: ServiceContext,
  session: AppSession,
  options: {
    notice?: string | null;
    before?: Html | null;
    problems?: string[];
    filter?: string;
    url?: string;
    errors?: FieldErrors;
  } = {},
) {
  // Read before the endpoint, as `currentConfig` does.
  const version = await currentConfigVersion(ctx, session.workspace);
  const endpoint = await webhookEndpointOf(ctx, session.workspace.id);
  const entries = await deliveryLog(ctx, session.workspace.id, { state: options.filter, limit: SHOWN });
  const dead = await deadDeliveries(ctx, session.workspace.id, DEAD_COUNTED);
  const body = webhookBody(session, {
    before: options.before ?? null,
    problems: options.problems ?? [],
    endpoint: {
      endpoint,
      version,
      now: ctx.now(),
      url: options.url ?? endpoint?.url ?? '',
      errors: options.errors ?? {},
    },
    log: { entries, filter: options.filter, dead, disabled: !endpoint || endpoint.disabledAt !== null },
  });
  return adminPage(ctx, session, { title: 'Webhook', active: 'webhook', notice: options.notice }, body);
}

/** The `webhook` part of the workspace file, through `applyChange`, keeping the new secret if one was made. */
async function applyWebhook(
  ctx: ServiceContext,
  session: AppSession,
  readAt: number | undefined,
  edit: (current: WorkspaceConfig['webhook']) => WorkspaceConfig['webhook'],
): Promise<{ issues: FieldIssue[] } | { secret?: string }> {
  let secret: string | undefined;
  const issues = await applyChange(
    ctx,
    session,
    readAt,
    (current) => ({ webhook: edit(current.webhook) }),
    (applied) => {
      secret = applied.webhook_secret;
    },
  );
  return issues ? { issues } : { secret };
}

/** A confirmation step, as its own page. */
const confirmPage = (
  ctx: ServiceContext,
  session: AppSession,
  title: string,
  card: Parameters<typeof confirmCard>[1],
) => adminPage(ctx, session, { title, active: 'webhook' }, confirmCard(session, card));

async function save(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  const refused = async (errors: FieldErrors, problems: string[]) =>
    sendPage(
      reply,
      await mainPage(ctx, session, {
        url: typedUrl(request.body),
        errors,
        problems: [...Object.values(errors).map((message) => `URL: ${message}`), ...problems],
      }),
      422,
    );
  const parsed = parseWebhookForm(request.body);
  if (!parsed.ok) return refused(parsed.errors, []);
  const before = await webhookEndpointOf(ctx, session.workspace.id);
  const result = await applyWebhook(ctx, session, readAtOf(request.body), (current) =>
    webhookEntry(parsed.value, current),
  );
  if ('issues' in result) {
    const errors: FieldErrors = {};
    const others = attachIssues(result.issues, 'webhook', errors);
    return refused(
      errors,
      others.map((issue) => describeIssue(issue, {})),
    );
  }
  if (result.secret) {
    // The answer to the POST itself shows the secret: no redirect, nothing kept to show it again.
    const shown = secretBox('Endpoint set: its signing secret', result.secret, null);
    return sendPage(reply, await mainPage(ctx, session, { before: shown }));
  }
  return redirectWithNotice(reply, PAGE, before?.disabledAt != null ? 'enabled' : 'updated');
}

async function rotate(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  if (!(await webhookEndpointOf(ctx, session.workspace.id))) return notFound(reply, session);
  if (field(request.body, 'confirm') !== 'yes') {
    const page = await confirmPage(ctx, session, 'Rotate webhook secret', {
      title: 'Rotate the signing secret?',
      message: rotateQuestion(ctx.now() + ROTATION_OVERLAP_MS),
      action: `${PAGE}/rotate`,
      fields: {},
      button: 'Rotate secret',
      back: PAGE,
    });
    return sendPage(reply, page);
  }
  let secret: string;
  try {
    ({ secret } = await rotateWebhookSecret(ctx, session.workspace.id));
  } catch (error) {
    if (error instanceof ServiceError && error.code === 'not_found') return notFound(reply, session);
    throw error;
  }
  const rotated = await webhookEndpointOf(ctx, session.workspace.id);
  const until = rotated?.previousUntil ?? ctx.now() + ROTATION_OVERLAP_MS;
  const shown = secretBox('New signing secret', secret, rotatedNote(until));
  return sendPage(reply, await mainPage(ctx, session, { before: shown }));
}

async function remove(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  const endpoint = await webhookEndpointOf(ctx, session.workspace.id);
  if (!endpoint) return notFound(reply, session);
  if (field(request.body, 'confirm') !== 'yes') {
    const page = await confirmPage(ctx, session, 'Remove webhook endpoint', {
      title: 'Remove the webhook endpoint?',
      message: removeQuestion(endpoint.url),
      action: `${PAGE}/delete`,
      fields: versionPassedOn(request.body),
      button: 'Remove endpoint',
      back: PAGE,
    });
    return sendPage(reply, page);
  }
  const result = await applyWebhook(ctx, session, readAtOf(request.body), () => null);
  if ('issues' in result) {
    const problems = result.issues.map((issue) => issue.message);
    return sendPage(reply, await mainPage(ctx, session, { problems }), 422);
  }
  return redirectWithNotice(reply, PAGE, 'removed');
}

async function sendAgain(ctx: ServiceContext, request: FastifyRequest<Posted>, reply: FastifyReply) {
  const session = request.appSession!;
  let ids: string[] | 'all-dead';
  if (field(request.body, 'all') === 'dead') ids = 'all-dead';
  else {
    const id = field(request.body, 'id');
    const event = EVENT_ID.test(id) ? await webhookEventOf(ctx, session.workspace.id, id) : null;
    if (!event)
      return problemPage(reply, 404, 'Not found', 'No such webhook event in this workspace.', session);
    ids = [id];
  }
  const { requeued } = await redeliver(ctx, session.workspace.id, ids);
  return redirectWithNotice(reply, PAGE, `redelivered:${requeued}`);
}

export function webhookPages(app: FastifyInstance, { ctx }: PageDeps) {
  app.get<{ Querystring: { state?: string } }>(PAGE, ADMIN, async (request, reply) => {
    const { state } = request.query;
    const filter = (DELIVERY_STATES as readonly string[]).includes(state ?? '') ? state : undefined;
    const notice = webhookNotice(takeNotice(request, reply));
    return sendPage(reply, await mainPage(ctx, request.appSession!, { notice, filter }));
  });
  app.post<Posted>(PAGE, ADMIN, (request, reply) => save(ctx, request, reply));
  app.post<Posted>(`${PAGE}/rotate`, ADMIN, (request, reply) => rotate(ctx, request, reply));
  app.post<Posted>(`${PAGE}/delete`, ADMIN, (request, reply) => remove(ctx, request, reply));
  app.post<Posted>(`${PAGE}/test`, ADMIN, async (request, reply) => {
    const session = request.appSession!;
    try {
      await sendTestEvent(ctx, session.workspace.id);
    } catch (error) {
      if (!(error instanceof ServiceError)) throw error;
      return sendPage(reply, await mainPage(ctx, session, { problems: ['Set an endpoint first.'] }), 409);
    }
    return redirectWithNotice(reply, PAGE, 'tested');
  });
  app.post<Posted>(`${PAGE}/redeliver`, ADMIN, (request, reply) => sendAgain(ctx, request, reply));
}
