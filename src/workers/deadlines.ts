/** The deadline worker: expires overdue pending holds, durable across restarts (deadlines are stored). */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { expireOverdueHolds } from '../services/expire-holds.ts';
import { startWorker } from './loop.ts';

const BATCH = 100;

export function startDeadlineWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger; onExpired?: (count: number) => void },
) {
  return startWorker({
    name: 'deadline',
    intervalMs: options.intervalMs,
    log: options.log,
    async round() {
      // A full batch means more may be waiting: sweep again at once.
      for (let count = BATCH; count === BATCH;) {
        count = await expireOverdueHolds(ctx, BATCH);
        if (count > 0) options.onExpired?.(count);
      }
    },
  });
}
