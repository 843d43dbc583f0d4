import type { FastifyBaseLogger } from 'fastify';
import { describeSafely } from '../services/errors.ts';
import type { HoldEvents } from '../services/hold-events.ts';

/**
 * A worker's heartbeat: run `work`, wait `intervalMs` (or until kicked), repeat; never two at once.
 * `next()` asks for a round and says when it is done (tests: the clock moved, or nothing more is to come).
 */
export function startLoop(work: () => Promise<void>, intervalMs: number) {
  let stopped = false;
  let kicked = false;
  let wake: (() => void) | undefined;
  /** Callers of `next()` waiting for a round that starts after their call. */
  let waiting: (() => void)[] = [];
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
      const these = waiting;
      waiting = [];
      try {
        await work();
      } finally {
        for (const done of these) done();
      }
      if (!kicked && !stopped) await pause();
    }
    for (const done of waiting.splice(0)) done();
  })();
  const kick = () => {
    kicked = true;
    wake?.();
  };
  return {
    /** Run again as soon as the current round is done. */
    kick,
    /** Runs a round as soon as the current one is done; resolves when it has finished (at once when stopped). */
    next(): Promise<void> {
      if (stopped) return Promise.resolve();
      const done = new Promise<void>((resolve) => waiting.push(resolve));
      kick();
      return done;
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
 * retried next time; with `wakeOn`, every hold change starts a round at once. A round may return
 * the work it started without waiting for it (sends, calls): `stop` and `settle` wait for that too.
 */
export function startWorker(options: {
  name: string;
  intervalMs: number;
  log: FastifyBaseLogger;
  wakeOn?: HoldEvents;
  /** Resolves with the work it started and did not wait for, if any; that work must not reject. */
  round: () => Promise<Iterable<Promise<unknown>> | void>;
}) {
  const inFlight = new Set<Promise<unknown>>();
  const loop = startLoop(async () => {
    try {
      for (const work of (await options.round()) ?? []) {
        inFlight.add(work);
        const done = () => inFlight.delete(work);
        void work.then(done, done);
      }
    } catch (error) {
      options.log.warn({ ...describeSafely(error) }, `${options.name} round failed; retrying`);
    }
  }, options.intervalMs);
  const unwatch = options.wakeOn?.watchAll(() => loop.kick());
  return {
    kick: () => loop.kick(),
    /**
     * Lets the work in flight finish, runs a round, and resolves once that round and the work it
     * started have finished: whatever was due when it was called has been done.
     */
    async settle() {
      await Promise.all(inFlight);
      await loop.next();
      await Promise.all(inFlight);
    },
    async stop() {
      unwatch?.();
      await loop.stop();
      await Promise.all(inFlight);
    },
  };
}

/**
 * A worker for claimed jobs: each round claims up to the free slots and attempts each job without
 * waiting for the batch, so one slow attempt holds one slot; a finished attempt looks for more.
 * A job is what its claim read (an id, or the row itself).
 */
export function startJobWorker<Job>(options: {
  name: string;
  slots: number;
  intervalMs: number;
  log: FastifyBaseLogger;
  wakeOn: HoldEvents;
  claim: (limit: number) => Promise<Job[]>;
  attempt: (job: Job) => Promise<void>;
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
      const started: Promise<void>[] = [];
      for (const job of await options.claim(free)) {
        const work = options
          .attempt(job)
          .catch((error: unknown) =>
            options.log.warn({ ...describeSafely(error) }, `${options.name} attempt failed; retrying`),
          )
          .finally(() => {
            inFlight.delete(work);
            worker?.kick();
          });
        inFlight.add(work);
        started.push(work);
      }
      return started;
    },
  });
  return {
    settle: () => worker?.settle() ?? Promise.resolve(),
    async stop() {
      await worker?.stop();
      worker = undefined;
    },
  };
}
