/** The execution worker: runs approved proxy calls as soon as they are approved. */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { describeSafely } from '../services/errors.ts';
import { approvedCallsToRun, executeApproved, failStaleExecutions } from '../services/execute-approved.ts';
import type { Upstreams } from '../services/proxy-call.ts';
import { startWorker } from './loop.ts';

export function startExecutionWorker(
  ctx: ServiceContext,
  upstreams: Upstreams,
  options: { intervalMs: number; log: FastifyBaseLogger },
) {
  return startWorker({
    name: 'execution',
    intervalMs: options.intervalMs,
    log: options.log,
    // A decision wakes the worker at once instead of at the next round.
    wakeOn: ctx.holdEvents,
    async round() {
      await failStaleExecutions(ctx);
      // Calls run side by side; each is claimed first, so no two workers run the same one. The
      // worker waits for them when it stops.
      return (await approvedCallsToRun(ctx, 20)).map((hold) =>
        executeApproved(ctx, upstreams, hold).catch((error: unknown) =>
          options.log.warn({ ...describeSafely(error) }, 'approved call not run; retrying'),
        ),
      );
    },
  });
}
