/** The webhook worker: one attempt per due event per round, woken at once by new events. */
import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { ServiceContext } from '../services/context.ts';
import { deliverDueEvents } from '../services/webhooks.ts';
import { sendWebhook } from '../webhooks/sender.ts';
import { startLoop } from './loop.ts';

export function startWebhookWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; retryScale: number; log: FastifyBaseLogger },
) {
  const send = (url: string, headers: Record<string, string>, body: string) =>
    sendWebhook(url, headers, body, { allowPrivate: ctx.allowPrivateTargets });
  const loop = startLoop(async () => {
    try {
      // A full round means more may be due: go again at once.
      for (let tried = 20; tried === 20;)
        tried = await deliverDueEvents(ctx, send, { retryScale: options.retryScale });
    } catch (error) {
      options.log.warn({ ...describeSafely(error) }, 'webhook round failed; retrying');
    }
  }, options.intervalMs);
  const unwatch = ctx.holdEvents.watchAll(() => loop.kick());
  return {
    async stop() {
      unwatch();
      await loop.stop();
    },
  };
}
