/**
 * The notification worker: sends due e-mails, SMS and Slack messages, a few at a time, each one
 * attempt per claim; every hold change starts a round at once.
 */
import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { ServiceContext } from '../services/context.ts';
import { claimNotifications, sendNotification } from '../services/notifications.ts';
import { startWorker } from './loop.ts';

const SLOTS = 20;

export function startNotificationWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger },
) {
  const inFlight = new Set<Promise<void>>();
  let worker: ReturnType<typeof startWorker> | undefined;
  worker = startWorker({
    name: 'notification',
    intervalMs: options.intervalMs,
    log: options.log,
    wakeOn: ctx.holdEvents,
    async round() {
      const free = SLOTS - inFlight.size;
      if (free <= 0) return;
      for (const id of await claimNotifications(ctx, free)) {
        const work = sendNotification(ctx, id)
          .catch((error: unknown) =>
            options.log.warn({ ...describeSafely(error) }, 'notification attempt failed; retrying'),
          )
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
