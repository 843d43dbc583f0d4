/** Waiting in tests: a pause, and polling until something is there. */
import { setTimeout as sleep } from 'node:timers/promises';

export { sleep };

/** Polls `probe` every 20 ms until it returns something other than undefined, or fails after `timeoutMs`. */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}
