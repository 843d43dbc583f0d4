/**
 * The webhook worker: each due event gets one attempt, up to 50 at a time. Attempts are not waited
 * for as a batch, so a slow receiver (up to 10 s) holds one slot, not everyone's deliveries.
 */
import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { ServiceContext } from '../services/context.ts';
import { attemptDelivery, claimDeliveries } from '../services/webhooks.ts';
import { sendWebhook } from '../webhooks/sender.ts';
import { startWorker } from './loop.ts';

const SLOTS = 50;

export function startWebhookWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; retryScale: number; log: FastifyBaseLogger },
) {
  const send = (url: string, headers: Record<string, string>, body: string) =>
    sendWebhook(url, headers, body, { allowPrivate: ctx.allowPrivateTargets });
  const inFlight = new Set<Promise<void>>();
  let worker: ReturnType<typeof startWorker> | undefined;
  worker = startWorker({
    name: 'webhook',
    intervalMs: options.intervalMs,
    log: options.log,
    wakeOn: ctx.holdEvents,
    async round() {
      const free = SLOTS - inFlight.size;
      if (free <= 0) return;
      for (const id of await claimDeliveries(ctx, free)) {
        const work = attemptDelivery(ctx, send, id, options.retryScale)
          .catch((error: unknown) =>
            options.log.warn({ ...describeSafely(error) }, 'webhook attempt failed; retrying'),
          )
          // A finished attempt frees a slot: look for more due events at once.
          .finally(() => {
            inFlight.delete(work);
            worker?.kick();
          });
        inFlight.add(work);
      }
    },
  });
  return {
    async stop() {
      await worker?.stop();
      worker = undefined;
      await Promise.all(inFlight);
    },
  };
}
