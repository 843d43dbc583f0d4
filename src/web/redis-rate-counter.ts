/**
 * Rate-limit windows counted in Redis (`REDIS_URL`): one INCRBY and one PEXPIRE per hit, pipelined. Commands
 * fail at once while Redis is unreachable (no offline queue), so requests pass instead of waiting: the
 * contract lets requests through when counting fails.
 */
import { createClient } from 'redis';
import { type Backoff, backoffDelay } from '../domain/backoff.ts';
import type { RateCounter, WindowCount } from './rate-limiter.ts';

const ANSWER_WITHIN_MS = 250;
/** Reconnects once connected: 100 ms doubling, at most every 5 s (`retries` counts from 0). */
const RECONNECTS: Backoff = { firstMs: 100, longestMs: 5_000 };

type Log = { warn(object: object, message: string): void };

export interface RedisRateCounter extends RateCounter {
  /** Where outages are reported, once the server's logger exists. */
  log: Log | null;
  close(): Promise<void>;
}

/** Connects first: an unreachable Redis at start stops the start, as an unreachable database does. */
export async function connectRedisRateCounter(url: string): Promise<RedisRateCounter> {
  let warned = false;
  let ready = false;
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: 2000,
      // Never connected: give up, so the start fails. Connected once: keep trying, backing off.
      reconnectStrategy: (retries, cause) => (ready ? backoffDelay(RECONNECTS, retries + 1) : cause),
    },
  });
  const counter: RedisRateCounter = {
    log: null,
    async hit(key: string, windowMs: number, now: number, by = 1): Promise<WindowCount> {
      const start = now - (now % windowMs);
      const name = `approvals:rate:${key}:${start}`;
      const counted = client
        .multi()
        .incrBy(name, by)
        .pExpire(name, 2 * windowMs)
        .exec();
      let timer: NodeJS.Timeout | undefined;
      // A Redis that does not answer quickly counts as failed: the request is not held up by it.
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('Redis did not answer in time')), ANSWER_WITHIN_MS);
      });
      try {
        const [count] = await Promise.race([counted, late]);
        return { count: Number(count), resetMs: start + windowMs - now };
      } finally {
        clearTimeout(timer);
        counted.catch(() => {}); // a late failure has no one left to tell
      }
    },
    async close() {
      client.destroy();
    },
  };
  client.on('error', (error: unknown) => {
    // Logged once per outage; the client keeps reconnecting by itself.
    if (!warned)
      counter.log?.warn({ err: error }, 'rate limits: Redis unreachable; requests pass until it is back');
    warned = true;
  });
  client.on('ready', () => {
    ready = true;
    warned = false;
  });
  await client.connect();
  return counter;
}
