/** The notification worker: sends due e-mails, SMS and Slack messages, 20 at a time. */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { claimNotifications, sendNotification } from '../services/send-notifications.ts';
import { startJobWorker } from './loop.ts';

export const startNotificationWorker = (
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger },
) =>
  startJobWorker({
    ...options,
    name: 'notification',
    slots: 20,
    wakeOn: ctx.holdEvents,
    claim: (limit) => claimNotifications(ctx, limit),
    attempt: (id) => sendNotification(ctx, id),
  });
