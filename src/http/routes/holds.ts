/** POST /api/v1/holds, GET /api/v1/holds/:id, POST /api/v1/holds/:id/wait. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { holdRecord, SDK_CONNECTION } from '../../domain/hold.ts';
import type { ServiceContext } from '../../services/context.ts';
import { getHoldForAgent, waitForHold } from '../../services/read-hold.ts';
import { keyRequester } from '../../services/api-keys.ts';
import { submitHold } from '../../services/submit-hold.ts';
import { fieldIssues, HttpError, sendValidationError } from '../../web/errors.ts';
import { type HoldCreatedBody, holdParamsSchema, holdSubmissionSchema, waitBodySchema } from '../schemas.ts';

export interface HoldRoutesOptions {
  ctx: ServiceContext;
  docsUrl: () => string;
  onSubmitted: (status: string) => void;
}

/** A malformed reference cannot exist: answer 404 without touching storage. */
function reference(params: unknown): string {
  const parsed = holdParamsSchema.safeParse(params);
  if (!parsed.success) throw new HttpError(404, 'not_found');
  return parsed.data.id;
}

export function holdRoutes(app: FastifyInstance, { ctx, docsUrl, onSubmitted }: HoldRoutesOptions) {
  const invalid = (reply: FastifyReply, error: Parameters<typeof fieldIssues>[0]) =>
    sendValidationError(reply, docsUrl(), fieldIssues(error));

  app.post('/api/v1/holds', { config: { bucket: 'v1' } }, async (request, reply) => {
    if (request.body === undefined) throw new HttpError(400, 'invalid_json');
    const parsed = holdSubmissionSchema.safeParse(request.body);
    if (!parsed.success) return invalid(reply, parsed.error);
    const body = parsed.data;
    const { workspace, key } = request.caller!;
    const result = await submitHold(
      ctx,
      { workspace, environment: key.env, requester: keyRequester(key) },
      {
        connection: SDK_CONNECTION,
        toolName: body.tool_name,
        arguments: body.arguments ?? {},
        agent: { id: body.agent_identity.id, label: body.agent_identity.label ?? null },
        context: body.context ?? {},
        idempotencyKey: body.idempotency_key,
      },
    );
    const answer = result.body satisfies HoldCreatedBody;
    if (!result.created) return reply.code(200).header('Idempotent-Replayed', 'true').send(answer);
    onSubmitted(answer.status);
    return reply.code(201).send(answer);
  });

  app.get('/api/v1/holds/:id', { config: { bucket: 'v1' } }, async (request) => {
    // `approved` only with its approval in the evidence (issue 37).
    const hold = await getHoldForAgent(ctx, request.caller!.workspace.id, reference(request.params));
    return holdRecord(hold);
  });

  app.post('/api/v1/holds/:id/wait', { config: { bucket: 'v1-wait' } }, async (request, reply) => {
    const id = reference(request.params);
    const parsed = waitBodySchema.safeParse(request.body ?? {});
    if (!parsed.success) return invalid(reply, parsed.error);
    const timeoutMs = parsed.data.timeout_seconds * 1000;
    // A client that hangs up stops waiting at once, instead of holding a waiter until its timeout.
    const gone = new AbortController();
    const hangUp = () => reply.raw.writableFinished || gone.abort();
    reply.raw.once('close', hangUp);
    try {
      const hold = await waitForHold(ctx, request.caller!.workspace.id, id, timeoutMs, gone.signal);
      return holdRecord(hold);
    } finally {
      reply.raw.off('close', hangUp);
    }
  });
}
