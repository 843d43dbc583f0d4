/** Prometheus metrics of one service instance. */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export function createMetrics(waiting: () => number, frozenChains: () => Promise<number>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpRequests: new Histogram({
      name: 'approvals_http_request_duration_seconds',
      help: 'HTTP requests by route, method and status code.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60],
      registers: [registry],
    }),
    holdsSubmitted: new Counter({
      name: 'approvals_holds_submitted_total',
      help: 'New holds by the status the rules answered.',
      labelNames: ['status'],
      registers: [registry],
    }),
    holdsExpired: new Counter({
      name: 'approvals_holds_expired_total',
      help: 'Holds expired by the deadline worker.',
      registers: [registry],
    }),
    chainsFrozen: new Gauge({
      name: 'approvals_evidence_chains_frozen',
      help: 'Workspaces whose evidence chain failed the check before an append and waits for a re-anchor.',
      registers: [registry],
      async collect() {
        this.set(await frozenChains());
      },
    }),
    waiters: new Gauge({
      name: 'approvals_waiters',
      help: 'Open long-polls (/wait).',
      registers: [registry],
      collect() {
        this.set(waiting());
      },
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
