/**
 * The load generator, run as its own process so it never shares an event loop with the service:
 * `node bench/load.ts '<Load as JSON>'` drives autocannon (as fast as the service answers) or an
 * evenly paced open loop (a fixed rate), and prints one JSON line (`LoadResult`).
 * Submissions rotate over the API keys (the rate limit is 120 a minute per workspace) and carry an
 * idempotency key never used before, so each acknowledged request is one new hold.
 */
import autocannon, { type Request } from 'autocannon';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Load {
  /** One or more service base URLs; connections are spread over them. */
  urls: string[];
  /** `GET /healthz`, or a submission of `tool` as POST /api/v1/holds. */
  target: { kind: 'healthz' } | { kind: 'submit'; tool: string; keys: string[] };
  connections: number;
  seconds: number;
  /** Requests per second, evenly spaced (an open loop); absent: as fast as the service answers. */
  rate?: number;
}

export interface LoadResult {
  requests: number;
  perSecond: number;
  /** Latency in ms, corrected for coordinated omission when a rate is set. */
  p50: number;
  p99: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
}

interface Outgoing {
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** The requests of `target`, one after the other. */
function requestsOf(target: Load['target']): () => Outgoing {
  if (target.kind === 'healthz') return () => ({ method: 'GET', path: '/healthz', headers: {} });
  const { tool, keys } = target;
  // A different start per process, so runs in the same minute spread over all workspaces.
  let sent = Math.floor(Math.random() * keys.length);
  const run = `${process.pid}-${Date.now().toString(36)}`;
  return () => {
    sent += 1;
    return {
      method: 'POST',
      path: '/api/v1/holds',
      headers: { authorization: `Bearer ${keys[sent % keys.length]}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        tool_name: tool,
        arguments: { amount: 100 + (sent % 900), currency: 'EUR', invoice: `INV-${sent}` },
        agent_identity: { id: 'load-agent', label: 'Load agent' },
        context: { run },
        idempotency_key: `${run}-${sent}`,
      }),
    };
  };
}

/** As many requests as the service answers, on `connections` kept connections (autocannon). */
async function closedLoop(load: Load): Promise<LoadResult> {
  const next = requestsOf(load.target);
  const requests: Request[] = [{ setupRequest: (request) => ({ ...request, ...next() }) }];
  const result = await autocannon({
    // autocannon takes several URLs (connection i goes to URL i mod n); its types say one string.
    url: load.urls as unknown as string,
    connections: load.connections,
    duration: load.seconds,
    requests,
  });
  const statuses = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, Number(stat.count)]),
  );
  return {
    requests: result.requests.total,
    perSecond: result.requests.total / load.seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

/**
 * `send` started on a fixed schedule, `rate` a second evenly spaced for `seconds`, whatever the answers
 * do (an open loop, as wrk2 does). A call sent late is timed from when it was due, so a stall is not
 * hidden; a call sent early from when it was sent: a timer may fire up to a millisecond early (Node
 * keeps its timers on the event loop's clock, whole milliseconds read at the start of each turn), and a
 * call made 0.4 ms before its due time and answered in 0.3 ms would otherwise take -0.1 ms. That is how
 * `GET /healthz, p50 at 200/s` once read -0.129 ms (and a submission's ratio to it -9.52).
 * Latencies in ms; `failed` counts the calls whose promise rejected (not timed).
 */
export async function paced(
  rate: number,
  seconds: number,
  send: (index: number) => Promise<unknown>,
): Promise<{ latencies: number[]; failed: number; perSecond: number }> {
  const total = Math.round(rate * seconds);
  const latencies: number[] = [];
  let failed = 0;
  const calls: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const from = Math.min(due, performance.now());
    calls.push(
      send(i).then(
        () => void latencies.push(performance.now() - from),
        () => void (failed += 1),
      ),
    );
  }
  await Promise.all(calls);
  return { latencies, failed, perSecond: total / ((performance.now() - start) / 1000) };
}

/** Nearest-rank percentile of latencies already sorted; NaN for none (which the run then refuses). */
const rank = (sorted: number[], p: number) =>
  sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Requests sent on a fixed schedule (`paced`); autocannon's own rate sends each second's quota in one burst. */
async function openLoop(load: Load & { rate: number }): Promise<LoadResult> {
  const next = requestsOf(load.target);
  const agents = load.urls.map(() => new http.Agent({ keepAlive: true, maxSockets: load.connections }));
  const statuses: Record<string, number> = {};
  const { latencies, failed, perSecond } = await paced(
    load.rate,
    load.seconds,
    (i) =>
      new Promise<void>((resolve, reject) => {
        const at = i % load.urls.length;
        const outgoing = next();
        const url = new URL(outgoing.path, load.urls[at]);
        const request = http.request(url, {
          method: outgoing.method,
          headers: outgoing.headers,
          agent: agents[at],
        });
        request.on('response', (response) => {
          response.resume();
          response.on('end', () => {
            statuses[response.statusCode!] = (statuses[response.statusCode!] ?? 0) + 1;
            resolve();
          });
        });
        request.on('error', reject);
        request.end(outgoing.body);
      }),
  );
  for (const agent of agents) agent.destroy();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    requests: Math.round(load.rate * load.seconds),
    perSecond,
    p50: rank(sorted, 50),
    p99: rank(sorted, 99),
    statuses,
    errors: failed,
    timeouts: 0,
  };
}

export const runLoad = (load: Load): Promise<LoadResult> =>
  load.rate ? openLoop({ ...load, rate: load.rate }) : closedLoop(load);

if (import.meta.main) {
  const load = JSON.parse(process.argv[2] ?? '') as Load;
  process.stdout.write(`${JSON.stringify(await runLoad(load))}\n`);
}
