import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../http/errors.ts';
import type { HoldEvents } from '../services/hold-events.ts';

/** A worker's heartbeat: run `work`, wait `intervalMs` (or until kicked), repeat; never two at once. */
export function startLoop(work: () => Promise<void>, intervalMs: number) {
  let stopped = false;
  let kicked = false;
  let wake: (() => void) | undefined;
  const pause = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, intervalMs);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  const running = (async () => {
    while (!stopped) {
      kicked = false;
      await work();
      if (!kicked && !stopped) await pause();
    }
  })();
  return {
    /** Run again as soon as the current round is done. */
    kick() {
      kicked = true;
      wake?.();
    },
    async stop() {
      stopped = true;
      wake?.();
      await running;
    },
  };
}

/**
 * A background worker: `round` runs on the loop; a failed round is logged (without values) and
 * retried next time; with `wakeOn`, every hold change starts a round at once.
 */
export function startWorker(options: {
  name: string;
  intervalMs: number;
  log: FastifyBaseLogger;
  wakeOn?: HoldEvents;
  round: () => Promise<void>;
}) {
  const loop = startLoop(async () => {
    try {
      await options.round();
    } catch (error) {
      options.log.warn({ ...describeSafely(error) }, `${options.name} round failed; retrying`);
    }
  }, options.intervalMs);
  const unwatch = options.wakeOn?.watchAll(() => loop.kick());
  return {
    kick: () => loop.kick(),
    async stop() {
      unwatch?.();
      await loop.stop();
    },
  };
}

/**
 * A worker for claimed jobs: each round claims up to the free slots and attempts each job without
 * waiting for the batch, so one slow attempt holds one slot; a finished attempt looks for more.
 */
export function startJobWorker(options: {
  name: string;
  slots: number;
  intervalMs: number;
  log: FastifyBaseLogger;
  wakeOn: HoldEvents;
  claim: (limit: number) => Promise<string[]>;
  attempt: (id: string) => Promise<void>;
}) {
  const inFlight = new Set<Promise<void>>();
  let worker: ReturnType<typeof startWorker> | undefined;
  worker = startWorker({
    name: options.name,
    intervalMs: options.intervalMs,
    log: options.log,
    wakeOn: options.wakeOn,
    async round() {
      const free = options.slots - inFlight.size;
      if (free <= 0) return;
      for (const id of await options.claim(free)) {
        const work = options
          .attempt(id)
          .catch((error: unknown) =>
            options.log.warn({ ...describeSafely(error) }, `${options.name} attempt failed; retrying`),
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
