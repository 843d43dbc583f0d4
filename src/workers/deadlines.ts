/** The deadline worker: expires overdue pending holds, durable across restarts (deadlines are stored). */
import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { ServiceContext } from '../services/context.ts';
import { expireOverdueHolds } from '../services/expire-holds.ts';

export function startDeadlineWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger; onExpired?: (count: number) => void },
) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();

  const sweep = async () => {
    try {
      // A full batch means more may be waiting: sweep again at once.
      for (let count = 100; count === 100 && !stopped;) {
        count = await expireOverdueHolds(ctx, 100);
        if (count > 0) options.onExpired?.(count);
      }
    } catch (error) {
      options.log.warn({ ...describeSafely(error) }, 'deadline sweep failed; retrying');
    }
  };
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = sweep().then(schedule);
    }, options.intervalMs);
    timer.unref();
  };
  running = sweep().then(schedule);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
