/**
 * The deadline worker: expires overdue pending holds, acts on their reminders and escalation steps,
 * hands waiting holds to the delegates of members whose delegation came into force, durable across
 * restarts (deadlines, follow-ups and delegations are stored), and deletes the OAuth server's expired
 * objects.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { expireOverdueHolds } from '../services/expire-holds.ts';
import { dueDigestWork } from '../services/digests.ts';
import { dueWorkSweep } from '../services/due-work.ts';
import { dueFollowUpWork } from '../services/follow-ups.ts';
import { dueHandoverWork } from '../services/handovers.ts';
import { sweepExpiredOAuthRecords } from '../services/oauth.ts';
import { startWorker } from './loop.ts';

const BATCH = 100;
/** Expired OAuth codes and tokens are deleted at most this often: nothing reads them once expired. */
const OAUTH_SWEEP_MS = 60_000;

export function startDeadlineWorker(
  ctx: ServiceContext,
  options: { intervalMs: number; log: FastifyBaseLogger; onExpired?: (count: number) => void },
) {
  let oauthSweptAt = Number.NEGATIVE_INFINITY;
  const sweepHandovers = dueWorkSweep(dueHandoverWork);
  const sweepFollowUps = dueWorkSweep(dueFollowUpWork);
  const sweepDigests = dueWorkSweep(dueDigestWork);
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
      if (ctx.now() - oauthSweptAt >= OAUTH_SWEEP_MS) {
        oauthSweptAt = ctx.now();
        await sweepExpiredOAuthRecords(ctx);
      }
      // Handovers, reminders and escalation steps that came due, likewise; last, so that one that
      // fails holds up nothing else.
      let failure: unknown = null;
      try {
        for (let count = BATCH; count === BATCH;) count = await sweepHandovers(ctx, BATCH);
      } catch (error) {
        failure = error;
      }
      for (let count = BATCH; count === BATCH;) count = await sweepFollowUps(ctx, BATCH);
      // Digests whose window closed (the follow-ups above may have added to them), for the notification worker.
      for (let count = BATCH; count === BATCH;) count = await sweepDigests(ctx, BATCH);
      if (failure) throw failure;
    },
  });
}
