/** The checkpoint worker: publishes moved chain heads, at most once a minute per workspace. */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { publishCheckpoints } from '../services/publish-checkpoints.ts';
import { startWorker } from './loop.ts';

export function startCheckpointWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger },
) {
  // A chain that fails its check fails it every round: say so once per problem, not every second.
  const reported = new Set<string>();
  return startWorker({
    name: 'checkpoint',
    intervalMs: options.intervalMs,
    log: options.log,
    async round() {
      for (const { workspaceId, seq, reason } of (await publishCheckpoints(ctx)).refused) {
        const problem = `${workspaceId}:${seq}:${reason}`;
        if (reported.has(problem)) continue;
        reported.add(problem);
        options.log.error(
          { workspace: workspaceId, seq, reason },
          'evidence chain fails verification: its checkpoint is not published (GET /api/v1/audit/verify)',
        );
      }
    },
  });
}
