/** Waiting in tests: polling until something is there, an event with a time limit, and a pause. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A pause. Only for a load's own schedule (test/crash.test.ts: when to crash, a client's pause
 * before it tries again), never to wait for something to happen or to show that it did not: wait
 * for the event (`settles`), the condition (`until`), or the workers (`TestService.settled`).
 */
export { sleep };

/**
 * Polls `probe` every `everyMs` (20) until it returns something other than undefined, or fails after
 * `timeoutMs`: for a condition nothing announces (a row in storage, a count on another process).
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Resolves as `promise` does (an event the test waits for), or fails after `timeoutMs`. */
export async function settles<T>(what: string, promise: Promise<T>, timeoutMs = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
