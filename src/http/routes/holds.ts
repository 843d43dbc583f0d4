/** POST /api/v1/holds, GET /api/v1/holds/:id, POST /api/v1/holds/:id/wait. */
import { holdRecord } from '../../domain/hold.ts';
import { holdSubmissionSchema } from '../../services/hold-submission.ts';
import { getHoldForAgent, waitForHold } from '../../services/read-hold.ts';
import { allowedReceipt, receiptOf } from '../../services/receipts.ts';
import { keyRequester } from '../../services/api-keys.ts';
import { submitSdkHold } from '../../services/submit-hold.ts';
import { API_HEADERS, BODY_ERRORS, COMMON_ERRORS, defineRoute, headerRef } from '../route-table.ts';
import { holdCreatedSchema, holdParamsSchema, holdRecordSchema, waitBodySchema } from '../schemas.ts';

const submit = defineRoute({
  method: 'POST',
  url: '/api/v1/holds',
  bucket: 'v1',
  operationId: 'submitHold',
  tags: ['Holds'],
  summary: 'Submit an action',
  description:
    'The rules decide at once. 201 for a new hold. A retry with the same `idempotency_key` (same tool, agent id and arguments) answers 200 with the first body, unchanged, and `Idempotent-Replayed: true`; no second hold is made. The same key with a different action is refused with 422 on field `idempotency_key`. A key bound to an agent (`approvals keys create --agent`) submits for that agent only: another `agent_identity.id` is refused with 422 on that field.',
  body: { required: true, schema: holdSubmissionSchema },
  answers: {
    200: {
      description: 'Replay: the idempotency key was used before for the same action.',
      headers: { ...API_HEADERS, 'Idempotent-Replayed': headerRef('Idempotent-Replayed') },
      schema: holdCreatedSchema,
    },
    201: { description: 'A new hold.', schema: holdCreatedSchema },
    ...BODY_ERRORS,
    402: 'HoldLimitReached',
    403: 'KeyNotBound',
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  handler: async ({ body, request, answer }, { ctx, metrics }) => {
    const { workspace, key } = request.caller!;
    const caller = { workspace, environment: key.env, requester: keyRequester(key) };
    const result = await submitSdkHold(ctx, caller, body);
    const allowed = result.body.status === 'allowed';
    if (!result.created) {
      // A replay's hold was read back from the database: its receipt only as its evidence has it.
      const receipt = allowed ? await receiptOf(ctx, result.hold) : undefined;
      return answer(200, { ...result.body, receipt }, { 'Idempotent-Replayed': 'true' });
    }
    metrics.holdsSubmitted.labels(result.body.status).inc();
    const receipt = allowed ? await allowedReceipt(ctx, workspace.slug, result.hold) : undefined;
    return answer(201, { ...result.body, receipt });
  },
});

const read = defineRoute({
  method: 'GET',
  url: '/api/v1/holds/:id',
  bucket: 'v1',
  operationId: 'getHold',
  tags: ['Holds'],
  summary: 'Read a hold once',
  description:
    'A pending hold found past its deadline is expired before it is answered. A reference of another workspace is answered like an unknown one.',
  params: holdParamsSchema,
  answers: {
    200: { description: 'The hold record.', schema: holdRecordSchema },
    404: 'NotFound',
    ...COMMON_ERRORS,
  },
  handler: async ({ params, request, answer }, { ctx }) => {
    // `approved` only with its approval in the evidence (issue 37).
    const { workspace } = request.caller!;
    const hold = await getHoldForAgent(ctx, workspace.id, params.id);
    return answer(200, { ...holdRecord(hold), receipt: await receiptOf(ctx, hold) });
  },
});

const wait = defineRoute({
  method: 'POST',
  url: '/api/v1/holds/:id/wait',
  bucket: 'v1-wait',
  operationId: 'waitForHold',
  tags: ['Holds'],
  summary: 'Long-poll for the decision',
  description:
    'Answers as soon as the hold is no longer `pending`, at its deadline (then `expired`), or after `timeout_seconds` (default 60) with the current record, which may still be `pending`; then call again. A server that shuts down answers open waits at once with the current record. The body is optional: no body and no Content-Type is valid.',
  params: holdParamsSchema,
  body: { required: false, schema: waitBodySchema },
  answers: {
    200: {
      description: 'The hold record: decided, expired, or still pending at the timeout.',
      schema: holdRecordSchema,
    },
    ...BODY_ERRORS,
    404: 'NotFound',
    422: 'ValidationFailed',
    ...COMMON_ERRORS,
  },
  // Not an async function: while it waits, it keeps no suspended frame (see waitForHold).
  handler: ({ params, body, request, reply, answer }, { ctx }) => {
    const { workspace } = request.caller!;
    const waiting = waitForHold(ctx, workspace.id, params.id, body.timeout_seconds * 1000);
    // A client that hangs up stops waiting at once, instead of holding a waiter until its timeout
    // (after the answer, its 'close' finds the wait over and changes nothing). `on`, as 'close' comes
    // once: `once` would wrap the listener in a closure of its own.
    reply.raw.on('close', waiting.stop);
    return waiting.hold.then(async (hold) =>
      answer(200, { ...holdRecord(hold), receipt: await receiptOf(ctx, hold) }),
    );
  },
});

export const holdRoutes = [submit, read, wait];
