/** The webhook worker: one attempt per due event per round, woken at once by new events. */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { DELIVERY_ROUND, deliverDueEvents } from '../services/webhooks.ts';
import { sendWebhook } from '../webhooks/sender.ts';
import { startWorker } from './loop.ts';

export function startWebhookWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; retryScale: number; log: FastifyBaseLogger },
) {
  const send = (url: string, headers: Record<string, string>, body: string) =>
    sendWebhook(url, headers, body, { allowPrivate: ctx.allowPrivateTargets });
  return startWorker({
    name: 'webhook',
    intervalMs: options.intervalMs,
    log: options.log,
    wakeOn: ctx.holdEvents,
    async round() {
      // A full round means more may be due: go again at once.
      for (let tried = DELIVERY_ROUND; tried === DELIVERY_ROUND;)
        tried = await deliverDueEvents(ctx, send, { retryScale: options.retryScale });
    },
  });
}
