/**
 * The webhook worker: each due event gets one attempt, up to 50 at a time. Attempts are not waited
 * for as a batch, so a slow receiver (up to 10 s) holds one slot, not everyone's deliveries; the
 * outcomes that come together are recorded together.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { attemptDelivery, attemptRecorder, claimDeliveries } from '../services/webhooks.ts';
import { webhookSender } from '../webhooks/sender.ts';
import { startJobWorker } from './loop.ts';

export function startWebhookWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; retryScale: number; log: FastifyBaseLogger },
) {
  const sender = webhookSender({ allowPrivate: ctx.allowPrivateTargets });
  const delivering = { send: sender.send, record: attemptRecorder(ctx), retryScale: options.retryScale };
  const worker = startJobWorker({
    name: 'webhook',
    slots: 50,
    intervalMs: options.intervalMs,
    log: options.log,
    wakeOn: ctx.holdEvents,
    claim: (limit) => claimDeliveries(ctx, limit),
    attempt: (delivery) => attemptDelivery(ctx, delivering, delivery),
  });
  return {
    ...worker,
    async stop() {
      await worker.stop();
      await sender.close();
    },
  };
}
