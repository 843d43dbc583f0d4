/**
 * An allowed tools/call (server-everything's `echo`) through the MCP proxy, beside its floor: the
 * same call made directly to server-everything. Each client is the v2 SDK client on one kept
 * connection (one 2025-era session), calling sequentially. When the `mcp-proxy` package is
 * installed, the same call through it (a peer proxy: no rules, no evidence) is a third column.
 * Then the same three columns with SESSIONS sessions calling at once (one call in flight on each),
 * in calls per second: what the proxy takes in when many agents call, beside the upstream alone.
 *
 * Every server is a process of its own: the service (`src/main.ts` on SQLite), the peer
 * (bench/mcp-peer.ts) and the upstream (server-everything); the clients run in this process. Each
 * column also gives the CPU time per call of the process that serves it (/proc/<pid>/stat), which
 * does not depend on how many cores the machine has or who else takes them: the proxy's beside the
 * peer's, the peer's beside the upstream's own per direct call.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { createApiKey } from '../src/services/api-keys.ts';
import { applyConfig, parseConfig } from '../src/services/apply-config.ts';
import { createWorkspace } from '../src/services/workspaces.ts';
import { openSqlite } from '../src/store/sqlite.ts';
import { sqlite } from '../test/support/backends.ts';
import { NODE } from '../test/support/cli.ts';
import { startEverything } from '../test/support/mcp-upstream.ts';
import { killServerProcesses, startServerProcess } from '../test/support/server-process.ts';
import { compared, cpuMicros, type Figure, percentile, profileSettings, sample } from './lib.ts';
import { PEER_KEY, type PeerStarted } from './mcp-peer.ts';

const WARMUP = 200;
const CALLS = 3_000;
const BUDGET_MS = 10_000;
const ROUNDS = 3;
/** Sessions calling at once in the concurrent figures, each its own client and connection. */
const SESSIONS = 16;
/** Each column's share of a round of the concurrent figures, and its warm-up before the first. */
const CONCURRENT_MS = 2_000;
const CONCURRENT_WARMUP_MS = 500;

export interface Skipped {
  figure: string;
  reason: string;
}

async function connect(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: 'bench', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

/** A column: the clients that call, and the process that serves them (whose CPU time is read). */
interface Column<C> {
  clients: C;
  pid: number;
}

/** `echo` on `client`; every answer must be the upstream's own. */
async function echo(client: Client, message: string) {
  const result = await client.callTool({ name: 'echo', arguments: { message } });
  const text = (result.content as { type: string; text?: string }[])[0]?.text;
  if (text !== `Echo: ${message}`) throw new Error(`echo answered ${JSON.stringify(result)}`);
}

/**
 * `work` with the CPU time it cost the process that serves it and the upstream, per call, in
 * microseconds; `work` answers how many calls it made.
 */
async function metered<T extends { calls: number }>(
  pid: number,
  upstreamPid: number,
  work: () => Promise<T>,
) {
  const own = cpuMicros(pid);
  const upstream = cpuMicros(upstreamPid);
  const result = await work();
  return { result, own: cpuMicros(pid) - own, upstream: cpuMicros(upstreamPid) - upstream };
}

interface Cpu {
  /** Microseconds of the serving process's CPU per call. */
  own: number;
  /** Microseconds of the upstream's CPU per call. */
  upstream: number;
}

/** The columns take turns, ROUNDS times, so a slower stretch of the machine is shared by all of them. */
async function measure(columns: Record<string, Column<Client>>, upstreamPid: number) {
  for (const [name, { clients }] of Object.entries(columns))
    await sample((i) => echo(clients, `${name}-warm-${i}`), {
      warmup: 0,
      count: WARMUP,
      budgetMs: BUDGET_MS,
    });
  const measured = Object.fromEntries(
    Object.keys(columns).map((name) => [
      name,
      { samples: [] as number[], totalMicros: 0, own: 0, upstream: 0 },
    ]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { clients, pid }] of Object.entries(columns)) {
      const { result, own, upstream } = await metered(pid, upstreamPid, async () => {
        const { samples, totalMicros } = await sample((i) => echo(clients, `${name}-${round}-${i}`), {
          warmup: 0,
          count: CALLS / ROUNDS,
          budgetMs: BUDGET_MS / ROUNDS,
        });
        return { samples, totalMicros, calls: samples.length };
      });
      const total = measured[name]!;
      total.samples.push(...result.samples);
      total.totalMicros += result.totalMicros;
      total.own += own;
      total.upstream += upstream;
    }
  }
  return Object.fromEntries(
    Object.entries(measured).map(([name, { samples, totalMicros, own, upstream }]) => [
      name,
      {
        samples,
        calls: samples.length,
        perSecond: samples.length / (totalMicros / 1e6),
        cpu: { own: own / samples.length, upstream: upstream / samples.length },
      },
    ]),
  );
}

/**
 * `echo` on every client at once, each calling again as soon as it is answered, for `ms`; every answer
 * must be the upstream's own. Calls answered, and the time from the start to the last answer.
 */
async function flood(clients: Client[], label: string, ms: number) {
  const end = performance.now() + ms;
  const start = performance.now();
  let calls = 0;
  await Promise.all(
    clients.map(async (client, session) => {
      for (let i = 0; performance.now() < end; i++) {
        await echo(client, `${label}-${session}-${i}`);
        calls += 1;
      }
    }),
  );
  return { calls, micros: (performance.now() - start) * 1000 };
}

/** SESSIONS clients per column, taking turns ROUNDS times as the sequential figures do: calls/s each. */
async function measureConcurrent(columns: Record<string, Column<Client[]>>, upstreamPid: number) {
  const totals = Object.fromEntries(
    Object.keys(columns).map((name) => [name, { calls: 0, micros: 0, own: 0, upstream: 0 }]),
  );
  for (const [name, { clients }] of Object.entries(columns)) await flood(clients, name, CONCURRENT_WARMUP_MS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { clients, pid }] of Object.entries(columns)) {
      const { result, own, upstream } = await metered(pid, upstreamPid, () =>
        flood(clients, `${name}-${round}`, CONCURRENT_MS),
      );
      const total = totals[name]!;
      total.calls += result.calls;
      total.micros += result.micros;
      total.own += own;
      total.upstream += upstream;
    }
  }
  return Object.fromEntries(
    Object.entries(totals).map(([name, { calls, micros, own, upstream }]) => [
      name,
      { calls, perSecond: calls / (micros / 1e6), cpu: { own: own / calls, upstream: upstream / calls } },
    ]),
  );
}

type Measured = { samples: number[]; perSecond: number };

/**
 * One durable commit, alone, on the disk the proxy writes to: the SQLite adapter the service uses, a
 * transaction of one small INSERT, answered once its log is synced. An allowed call through the proxy
 * waits for one (its hold is stored before the call goes upstream), a peer proxy for none.
 */
async function durableCommit(): Promise<Figure> {
  const dir = mkdtempSync(join(tmpdir(), 'approvals-bench-commit-'));
  const db = openSqlite(join(dir, 'commit.db'));
  try {
    await db.exec('CREATE TABLE calls (id INTEGER PRIMARY KEY, tool TEXT NOT NULL)');
    const { samples } = await sample(
      (i) => db.transaction((tx) => tx.run('INSERT INTO calls (tool) VALUES ($1)', [`echo-${i}`])),
      { warmup: 50, count: 1_000, budgetMs: 5_000 },
    );
    return {
      bench: 'mcp',
      figure: 'one durable commit (SQLite, as the proxy stores a hold), p50',
      value: percentile(samples, 50),
      unit: 'µs',
      note: `${samples.length} commits in sequence, each answered once the log is synced (fdatasync): what an allowed call waits for before it goes upstream`,
    };
  } finally {
    await db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function figures(name: string, measured: Measured, note: string): [Figure, Figure, Figure] {
  return [
    {
      bench: 'mcp',
      figure: `${name}, p50`,
      value: percentile(measured.samples, 50),
      unit: 'µs',
      note: `${note}; ${measured.samples.length} calls`,
    },
    { bench: 'mcp', figure: `${name}, p99`, value: percentile(measured.samples, 99), unit: 'µs' },
    { bench: 'mcp', figure: `${name}, calls/s`, value: measured.perSecond, unit: '/s' },
  ];
}

/**
 * The CPU figures of one set of columns (`suffix`: which): the upstream's CPU per direct call (the
 * floor), the peer's per call beside it, and the proxy's beside the peer's (beside the floor without
 * a peer).
 */
function cpuFigures(suffix: string, columns: Record<string, { cpu: Cpu; calls: number }>) {
  const figure = (name: string, what: string, value: number, note: string): Figure => ({
    bench: 'mcp',
    figure: `${name}${suffix}, ${what} CPU per call`,
    value,
    unit: 'µs',
    note,
  });
  const floor = figure(
    'echo direct to server-everything',
    'upstream',
    columns.direct!.cpu.own,
    `server-everything's process, user + system time (/proc/<pid>/stat) over ${columns.direct!.calls} calls`,
  );
  const result: Figure[] = [floor];
  let beside = floor;
  if (columns.peer) {
    beside = compared(
      figure(
        'echo through mcp-proxy (peer)',
        'peer',
        columns.peer.cpu.own,
        `the peer's process over ${columns.peer.calls} calls; the upstream's own meanwhile ${Math.round(columns.peer.cpu.upstream)} µs a call`,
      ),
      floor,
    );
    result.push(beside);
  }
  result.push(
    compared(
      figure(
        'echo through the proxy',
        'proxy',
        columns.proxy!.cpu.own,
        `the service's process (SQLite, every thread) over ${columns.proxy!.calls} calls; the upstream's own meanwhile ${Math.round(columns.proxy!.cpu.upstream)} µs a call`,
      ),
      beside,
    ),
  );
  return result;
}

/** bench/mcp-peer.ts in a process of its own, in front of `upstreamUrl`; a reason when it cannot run. */
async function startPeer(upstreamUrl: string) {
  const child = spawn(NODE, [join(import.meta.dirname, 'mcp-peer.ts'), upstreamUrl], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  // Its first line, or its end: a peer that fails before it listens says why on stderr, inherited.
  const line = await Promise.race([
    once(createInterface({ input: child.stdout! }), 'line').then(([text]) => text as string),
    exited.then(() => {
      throw new Error('bench: the peer (bench/mcp-peer.ts) exited before it listened');
    }),
  ]);
  const started = JSON.parse(line) as PeerStarted;
  return {
    started,
    pid: child.pid!,
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

const CONFIG = (upstreamUrl: string) => ({
  members: [{ email: 'admin@bench.test', name: 'Admin', role: 'admin' }],
  mcp_servers: [{ slug: 'everything', name: 'Everything', url: upstreamUrl }],
  tools: [{ connection: 'Everything', tool: 'echo', classification: 'allow' }],
});

export async function run(): Promise<{ figures: Figure[]; skipped: Skipped[] }> {
  const skipped: Skipped[] = [];
  const everything = await startEverything();
  const storage = await sqlite.create();
  const clients: Client[] = [];
  let peer: Awaited<ReturnType<typeof startPeer>> | undefined;
  try {
    // The upstream is on loopback, which the service refuses unless the operator allows it; the
    // benchmark measures the proxy, not its rate limit.
    const settings = { ...storage.env, DATABASE_URL: '', PUBLIC_URL: '', ALLOW_PRIVATE_TARGETS: 'true' };
    const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
    let key: string;
    try {
      const workspace = await createWorkspace(ctx, { slug: 'bench-mcp', name: 'Bench' });
      await applyConfig(ctx, workspace, parseConfig(JSON.stringify(CONFIG(everything.url))));
      ({ key } = await createApiKey(ctx, { workspace, env: 'live' }));
    } finally {
      await ctx.db.close();
    }
    const service = await startServerProcess(storage, {
      ...profileSettings,
      ALLOW_PRIVATE_TARGETS: 'true',
      MCP_RATE_LIMIT: '0',
    });
    const upstreamPid = everything.pid()!;
    const proxyUrl = `${service.url}/mcp/everything`;
    const proxyHeaders = { authorization: `Bearer ${key}` };

    const direct = await connect(everything.url);
    clients.push(direct);
    const proxied = await connect(proxyUrl, proxyHeaders);
    clients.push(proxied);
    const version = proxied.getNegotiatedProtocolVersion();
    const columns: Record<string, Column<Client>> = {
      direct: { clients: direct, pid: upstreamPid },
      proxy: { clients: proxied, pid: service.child.pid! },
    };

    peer = await startPeer(everything.url);
    const peerUrl = 'url' in peer.started ? peer.started.url : undefined;
    if ('skipped' in peer.started) {
      skipped.push({ figure: 'echo through mcp-proxy', reason: peer.started.skipped });
    } else {
      const client = await connect(peerUrl!, { 'x-api-key': PEER_KEY });
      clients.push(client);
      columns.peer = { clients: client, pid: peer.pid };
    }

    const measured = await measure(columns, upstreamPid);

    // SESSIONS sessions per column, each a client of its own (a new session, a new connection).
    const sessions = async (url: string, headers: Record<string, string> = {}) => {
      const opened: Client[] = [];
      for (let i = 0; i < SESSIONS; i++) {
        const client = await connect(url, headers);
        clients.push(client);
        opened.push(client);
      }
      return opened;
    };
    const concurrentColumns: Record<string, Column<Client[]>> = {
      direct: { clients: await sessions(everything.url), pid: upstreamPid },
      proxy: { clients: await sessions(proxyUrl, proxyHeaders), pid: service.child.pid! },
    };
    if (peerUrl)
      concurrentColumns.peer = { clients: await sessions(peerUrl, { 'x-api-key': PEER_KEY }), pid: peer.pid };
    const concurrent = await measureConcurrent(concurrentColumns, upstreamPid);
    // Stopped before the figures are made: with BENCH_PROFILE it writes its profile as it exits.
    service.child.kill('SIGTERM');
    await service.exited;

    const floor = figures(
      'echo direct to server-everything',
      measured.direct!,
      `the floor: v2 SDK client, one session (${version}), loopback, sequential, ${ROUNDS} rounds taking turns`,
    );
    const through = figures(
      'echo through the proxy',
      measured.proxy!,
      'allowed (classified allow): a hold, its evidence entries and the upstream call, SQLite, the service a process of its own',
    );
    const result: Figure[] = [...floor, ...through.map((figure, i) => compared(figure, floor[i]!))];
    if (measured.peer) {
      const peered = figures(
        'echo through mcp-proxy (peer)',
        measured.peer,
        'mcp-proxy library (startHTTPServer + proxyServer) in a process of its own, API key, no rules, no evidence',
      );
      result.push(...peered.map((figure, i) => compared(figure, floor[i]!)));
    }
    const concurrentFigure = (name: string, column: string, note: string): Figure => ({
      bench: 'mcp',
      figure: `${name}, ${SESSIONS} sessions, calls/s`,
      value: concurrent[column]!.perSecond,
      unit: '/s',
      note: `${note}; ${concurrent[column]!.calls} calls`,
    });
    const concurrentFloor = concurrentFigure(
      'echo direct to server-everything',
      'direct',
      `the floor: ${SESSIONS} v2 SDK clients, a session and a kept connection each, all calling at once (one call in flight each), ${ROUNDS} rounds of ${CONCURRENT_MS / 1000} s taking turns`,
    );
    result.push(
      concurrentFloor,
      compared(
        concurrentFigure(
          'echo through the proxy',
          'proxy',
          'the same clients through the proxy: a hold per call, SQLite',
        ),
        concurrentFloor,
      ),
    );
    if (concurrent.peer)
      result.push(
        compared(
          concurrentFigure('echo through mcp-proxy (peer)', 'peer', 'the same clients through mcp-proxy'),
          concurrentFloor,
        ),
      );
    result.push(...cpuFigures('', measured), ...cpuFigures(`, ${SESSIONS} sessions`, concurrent));
    result.push(await durableCommit());
    return { figures: result, skipped };
  } finally {
    for (const client of clients) await client.close().catch(() => undefined);
    await peer?.close();
    await killServerProcesses();
    await everything.stop();
    await storage.drop();
  }
}
