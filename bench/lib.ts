/** What the benchmarks share: a figure, timing and percentiles, and a real service to send requests to. */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { type RunningService, startService } from '../src/runtime.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import type { Workspace } from '../src/store/workspaces.ts';

/** One measured number. `ratio` is value / floor, both measured in the same run. */
export interface Figure {
  bench: string;
  figure: string;
  value: number;
  unit: string;
  /** The figure this one is compared with (and its value), when there is one. */
  floor?: { figure: string; value: number; unit: string };
  ratio?: number;
  note?: string;
}

const MICROS: Record<string, number> = { µs: 1, ms: 1_000, s: 1_000_000 };

/** `figure` with its floor and the ratio between them (durations in any of µs, ms, s). */
export function compared(figure: Figure, floor: Figure): Figure {
  const scale = figure.unit === floor.unit ? 1 : MICROS[figure.unit]! / MICROS[floor.unit]!;
  if (Number.isNaN(scale)) throw new Error(`cannot compare ${figure.unit} with ${floor.unit}`);
  return {
    ...figure,
    floor: { figure: floor.figure, value: floor.value, unit: floor.unit },
    ratio: (figure.value * scale) / floor.value,
  };
}

/**
 * What is wrong with `figure`, if anything: its value, its floor's value and its ratio must each be
 * a positive, finite number (a time, a rate, a size or a ratio of two of them can be nothing else).
 * `npm run bench` refuses a run with such a figure rather than write it.
 */
export function figureProblems(figure: Figure): string[] {
  const bad = (value: number | undefined) => value !== undefined && !(Number.isFinite(value) && value > 0);
  const problems: string[] = [];
  if (typeof figure.value !== 'number' || bad(figure.value))
    problems.push(`value ${figure.value} ${figure.unit}`);
  if (figure.floor && bad(figure.floor.value))
    problems.push(`floor "${figure.floor.figure}" ${figure.floor.value} ${figure.floor.unit}`);
  if (figure.ratio !== undefined && bad(figure.ratio)) problems.push(`ratio ${figure.ratio}`);
  if (figure.floor && figure.ratio === undefined) problems.push('a floor without a ratio');
  return problems;
}

/** Linux's clock ticks per second (`getconf CLK_TCK`), the unit of /proc/<pid>/stat's times. */
const TICKS_PER_SECOND = 100;

/**
 * The CPU time (user + system, every thread) process `pid` has used so far, in microseconds, as the
 * kernel counts it (/proc/<pid>/stat): what an operation costs there, whatever else shares the cores.
 * In steps of 10 ms (a clock tick): read it over thousands of operations.
 */
export function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime: fields 14 and 15 of the line, 12 and 13 after the command's name.
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
}

/** BENCH_PROFILE=<dir>: a service process started with these settings writes a CPU profile there when it stops. */
export const profileSettings: Record<string, string> = process.env.BENCH_PROFILE
  ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE}` }
  : {};

/** Microseconds since `start` (from `process.hrtime.bigint()`). */
export const microsSince = (start: bigint) => Number(process.hrtime.bigint() - start) / 1000;

/** Nearest-rank percentile of `values`, `p` in (0, 100]. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/**
 * Times `work` once per call, `count` times or until `budgetMs` has passed, whichever comes first;
 * the `warmup` calls before are not kept. Samples in microseconds.
 */
export async function sample(
  work: (index: number) => unknown,
  options: { warmup: number; count: number; budgetMs: number },
): Promise<{ samples: number[]; totalMicros: number }> {
  // Synchronous work is not awaited: an await would add a trip through the microtask queue to each sample.
  const once = async (index: number) => {
    const result = work(index);
    if (result instanceof Promise) await result;
  };
  for (let i = 0; i < options.warmup; i++) await once(i);
  const samples: number[] = [];
  const begin = process.hrtime.bigint();
  const budgetMicros = options.budgetMs * 1000;
  for (let i = 0; i < options.count && (i < 10 || microsSince(begin) < budgetMicros); i++) {
    const start = process.hrtime.bigint();
    const result = work(options.warmup + i);
    if (result instanceof Promise) await result;
    samples.push(microsSince(start));
  }
  return { samples, totalMicros: microsSince(begin) };
}

export interface BenchService {
  service: RunningService;
  /** A workspace configured from `config` (what `approvals apply` takes), with a live key. */
  workspace(config: object): Promise<{ workspace: Workspace; key: string }>;
  /** `approvals apply` on an existing workspace. */
  apply(workspace: Workspace, config: object): Promise<void>;
  /** POST a JSON body on the keep-alive connection; resolves with the status and parsed body. */
  post(path: string, key: string, body: unknown): Promise<{ status: number; body: unknown }>;
  /**
   * Moves the service's clock a minute on: the per-workspace rate limit (120 a minute) counts in
   * fixed windows of that clock, and a benchmark sends more than that.
   */
  nextMinute(): void;
  close(): Promise<void>;
}

let workspaces = 0;

/** A real service on SQLite in a temporary directory, on a free loopback port, quiet. */
export async function startBenchService(): Promise<BenchService> {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-bench-'));
  let offset = 0;
  let service: RunningService;
  try {
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      PUBLIC_URL: '',
      DATABASE_URL: '',
      DATA_DIR: dir,
      DEADLINE_SWEEP_MS: '60000',
      // The MCP benchmark measures the proxy, not its rate limit.
      MCP_RATE_LIMIT: '0',
    });
    service = await startService(config, { now: () => Date.now() + offset });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const { ctx } = service;
  const url = new URL(service.url);
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  return {
    service,
    async workspace(config) {
      workspaces += 1;
      const workspace = await createWorkspace(ctx, { slug: `bench-${workspaces}`, name: 'Bench' });
      await applyConfig(ctx, workspace, parseConfig(JSON.stringify(config)));
      const { key } = await createApiKey(ctx, { workspace, env: 'live' });
      return { workspace, key };
    },
    async apply(workspace, config) {
      await applyConfig(ctx, workspace, parseConfig(JSON.stringify(config)));
    },
    post(path, key, body) {
      const payload = JSON.stringify(body);
      return new Promise((resolve, reject) => {
        const req = request(
          {
            agent,
            host: url.hostname,
            port: url.port,
            path,
            method: 'POST',
            headers: {
              authorization: `Bearer ${key}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(payload),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => {
              const text = Buffer.concat(chunks).toString('utf8');
              try {
                resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
              } catch {
                resolve({ status: res.statusCode ?? 0, body: text });
              }
            });
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(payload);
      });
    },
    nextMinute() {
      offset += 60_000;
    },
    async close() {
      agent.destroy();
      try {
        await service.stop();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
