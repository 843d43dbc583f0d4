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
