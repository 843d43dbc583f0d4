/**
 * Hold submissions under load, from autocannon in a process of its own (bench/load.ts), on loopback,
 * against the service as its own process (`src/main.ts`):
 * - on each backend, beside the floor: the same server's `GET /healthz` (same framework, hooks and
 *   logging, no work). `POST /api/v1/holds` for a tool classified allow (answered at once) and for one
 *   that needs approval (pending): requests per second as fast as the service answers, and p50 and
 *   p99 at a fixed rate.
 * - on PostgreSQL: auto-allowed holds per second with one, two and three instances on one database,
 *   beside one instance.
 * After each run the database must hold every hold that was acknowledged: durability is measured too.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/runtime.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import type { ServiceContext } from '../src/services/context.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { backends, type Storage } from '../test/support/backends.ts';
import { NODE } from '../test/support/cli.ts';
import {
  killServerProcesses,
  type ServerProcess,
  startServerProcess,
} from '../test/support/server-process.ts';
import { compared, type Figure } from './lib.ts';
import type { Load, LoadResult } from './load.ts';

/** 120 submissions a minute per workspace: enough workspaces that no run meets the limit. */
const WORKSPACES = 600;
const SECONDS = 8;
/** A multiple of 1, 2 and 3, so the instances get the same share of connections. */
const CONNECTIONS = 24;
const RATE = 200;
const ALLOWED = 'read_balance';
const PENDING = 'send_invoice';

const CONFIG = {
  members: [
    { email: 'admin@bench.test', name: 'Admin', role: 'admin' },
    { email: 'ana@bench.test', name: 'Ana', role: 'approver' },
  ],
  tools: [
    { connection: 'SDK', tool: ALLOWED, classification: 'allow' },
    { connection: 'SDK', tool: PENDING, classification: 'approval' },
  ],
};

/** `bench/load.ts` in its own process; resolves with what it printed. */
function load(spec: Load): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [join(import.meta.dirname, 'load.ts'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as LoadResult);
      else reject(new Error(`bench: the load generator exited with ${code}`));
    });
  });
}

/** WORKSPACES workspaces configured alike, each with a live key, made through the services. */
async function seed(ctx: ServiceContext): Promise<string[]> {
  const keys: string[] = [];
  const config = parseConfig(JSON.stringify(CONFIG));
  for (let first = 0; first < WORKSPACES; first += 20) {
    const made = await Promise.all(
      Array.from({ length: Math.min(20, WORKSPACES - first) }, async (_, n) => {
        const workspace = await createWorkspace(ctx, { slug: `load-${first + n}`, name: 'Load' });
        await applyConfig(ctx, workspace, config);
        return (await createApiKey(ctx, { workspace, env: 'live' })).key;
      }),
    );
    keys.push(...made);
  }
  return keys;
}

const countHolds = async (ctx: ServiceContext) =>
  Number((await ctx.db.one<{ n: unknown }>('SELECT COUNT(*) AS n FROM holds'))?.n);

/**
 * A submission run; throws unless every answer was 201 and the database holds at least as many new
 * holds as were acknowledged (a request cut off by the end of the run may still have been stored).
 */
async function submitRun(ctx: ServiceContext, spec: Load, label: string): Promise<LoadResult> {
  const before = await countHolds(ctx);
  const result = await load(spec);
  const acknowledged = result.statuses['201'] ?? 0;
  const others = Object.entries(result.statuses).filter(([code]) => code !== '201');
  if (others.length > 0 || result.errors > 0 || acknowledged === 0)
    throw new Error(
      `bench: ${label}: answers ${JSON.stringify(result.statuses)}, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  const stored = (await countHolds(ctx)) - before;
  if (stored < acknowledged)
    throw new Error(`bench: ${label}: ${acknowledged} acknowledged, ${stored} stored`);
  return result;
}

function healthRun(spec: Load, label: string): Promise<LoadResult> {
  return load(spec).then((result) => {
    if (result.errors > 0 || Object.keys(result.statuses).some((code) => code !== '200'))
      throw new Error(`bench: ${label}: answers ${JSON.stringify(result.statuses)}, ${result.errors} errors`);
    return result;
  });
}

/** BENCH_PROFILE=<dir>: each service writes a CPU profile there when it stops (`--cpu-prof`). */
const serviceSettings: Record<string, string> = process.env.BENCH_PROFILE
  ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE}` }
  : {};

async function stop(services: ServerProcess[]) {
  for (const service of services) service.child.kill('SIGTERM');
  await Promise.all(services.map((service) => service.exited));
}

/** Healthz, allowed and pending, at full speed and at RATE, on one instance. */
async function oneInstance(name: string, storage: Storage, ctx: ServiceContext, keys: string[]) {
  const figures: Figure[] = [];
  const service = await startServerProcess(storage, serviceSettings);
  try {
    const urls = [service.url];
    const full = { urls, connections: CONNECTIONS, seconds: SECONDS };
    const fixed = { urls, connections: CONNECTIONS, seconds: SECONDS, rate: RATE };
    const submit = (tool: string) => ({ kind: 'submit' as const, tool, keys });
    // Warm-up: the code paths, the connection pool, the prepared statements.
    await submitRun(ctx, { ...full, seconds: 2, target: submit(ALLOWED) }, 'warm-up');
    await submitRun(ctx, { ...full, seconds: 2, target: submit(PENDING) }, 'warm-up');

    const floor = await healthRun({ ...full, target: { kind: 'healthz' } }, 'healthz');
    const floorFigure = (figure: string, value: number, unit: string): Figure => ({
      bench: 'holds',
      figure: `${name}: GET /healthz, ${figure}`,
      value,
      unit,
    });
    const floorRate = floorFigure(`${CONNECTIONS} connections, req/s`, floor.perSecond, '/s');
    figures.push(floorRate);
    for (const [label, tool] of [
      ['auto-allowed', ALLOWED],
      ['pending', PENDING],
    ] as const) {
      const result = await submitRun(ctx, { ...full, target: submit(tool) }, label);
      figures.push(
        compared(
          {
            bench: 'holds',
            figure: `${name}: submit ${label}, ${CONNECTIONS} connections, holds/s`,
            value: result.perSecond,
            unit: '/s',
            note: `${result.requests} holds in ${SECONDS} s, all acknowledged 201 and found stored`,
          },
          floorRate,
        ),
      );
    }

    const floorFixed = await healthRun({ ...fixed, target: { kind: 'healthz' } }, 'healthz');
    const p50Floor = floorFigure(`p50 at ${RATE}/s`, floorFixed.p50, 'ms');
    const p99Floor = floorFigure(`p99 at ${RATE}/s`, floorFixed.p99, 'ms');
    figures.push(p50Floor, p99Floor);
    for (const [label, tool] of [
      ['auto-allowed', ALLOWED],
      ['pending', PENDING],
    ] as const) {
      const result = await submitRun(ctx, { ...fixed, target: submit(tool) }, label);
      const figure = (p: string, value: number) => ({
        bench: 'holds',
        figure: `${name}: submit ${label}, ${p} at ${RATE}/s`,
        value,
        unit: 'ms',
      });
      figures.push(
        compared(figure('p50', result.p50), p50Floor),
        compared(figure('p99', result.p99), p99Floor),
      );
    }
  } finally {
    await stop([service]);
  }
  return figures;
}

/** Auto-allowed submissions spread over one, two and three instances on one PostgreSQL. */
async function scaleOut(storage: Storage, ctx: ServiceContext, keys: string[]) {
  const figures: Figure[] = [];
  let single: Figure | undefined;
  for (const count of [1, 2, 3]) {
    const services = await Promise.all(
      Array.from({ length: count }, () => startServerProcess(storage, serviceSettings)),
    );
    try {
      const spec = {
        urls: services.map((service) => service.url),
        connections: CONNECTIONS,
        target: { kind: 'submit' as const, tool: ALLOWED, keys },
      };
      await submitRun(ctx, { ...spec, seconds: 2 }, 'warm-up');
      const result = await submitRun(ctx, { ...spec, seconds: SECONDS }, `${count} instances`);
      const figure: Figure = {
        bench: 'holds',
        figure: `postgres: submit auto-allowed, ${count} instance${count > 1 ? 's' : ''}, holds/s`,
        value: result.perSecond,
        unit: '/s',
        note: `${CONNECTIONS} connections spread evenly; the instances, PostgreSQL and the load generator share the machine's cores`,
      };
      single ??= figure;
      figures.push(count === 1 ? figure : compared(figure, single));
    } finally {
      await stop(services);
    }
  }
  return figures;
}

export async function run() {
  const figures: Figure[] = [];
  const skipped: { figure: string; reason: string }[] = [];
  try {
    for (const backend of backends) {
      if (backend.skip) {
        skipped.push({ figure: `${backend.name}: submissions`, reason: backend.skip });
        continue;
      }
      const storage = await backend.create();
      const settings = { ...storage.env, DATABASE_URL: storage.env.DATABASE_URL ?? '', PUBLIC_URL: '' };
      const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
      try {
        const keys = await seed(ctx);
        figures.push(...(await oneInstance(backend.name, storage, ctx, keys)));
        if (backend.name === 'postgres') figures.push(...(await scaleOut(storage, ctx, keys)));
      } finally {
        await ctx.db.close();
        await storage.drop();
      }
    }
  } finally {
    await killServerProcesses();
  }
  return { figures, skipped };
}
