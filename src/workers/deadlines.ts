/** The deadline worker: expires overdue pending holds, durable across restarts (deadlines are stored). */
import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { ServiceContext } from '../services/context.ts';
import { expireOverdueHolds } from '../services/expire-holds.ts';
import { startLoop } from './loop.ts';

const BATCH = 100;

export function startDeadlineWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger; onExpired?: (count: number) => void },
) {
  return startLoop(async () => {
    try {
      // A full batch means more may be waiting: sweep again at once.
      for (let count = BATCH; count === BATCH;) {
        count = await expireOverdueHolds(ctx, BATCH);
        if (count > 0) options.onExpired?.(count);
      }
    } catch (error) {
      options.log.warn({ ...describeSafely(error) }, 'deadline sweep failed; retrying');
    }
  }, options.intervalMs);
}
