/**
 * An allowed tools/call (server-everything's `echo`) through the MCP proxy, beside its floor: the
 * same call made directly to server-everything. Each client is the v2 SDK client on one kept
 * connection (one 2025-era session), calling sequentially. When the `mcp-proxy` package is
 * installed, the same call through it (a peer proxy: no rules, no evidence) is a third column.
 * Then the same three columns with SESSIONS sessions calling at once (one call in flight on each),
 * in calls per second: what the proxy takes in when many agents call, beside the upstream alone.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { openSqlite } from '../src/store/sqlite.ts';
import { freePort, startEverything } from '../test/support/mcp-upstream.ts';
import { type BenchService, compared, type Figure, percentile, sample, startBenchService } from './lib.ts';

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

/** `echo` called in sequence on one client; every answer must be the upstream's own. */
async function echoes(client: Client, label: string, round: number) {
  const { samples, totalMicros } = await sample(
    async (i) => {
      const message = `${label}-${round}-${i}`;
      const result = await client.callTool({ name: 'echo', arguments: { message } });
      const text = (result.content as { type: string; text?: string }[])[0]?.text;
      if (text !== `Echo: ${message}`) throw new Error(`${label}: echo answered ${JSON.stringify(result)}`);
    },
    { warmup: round === 0 ? WARMUP : 0, count: CALLS / ROUNDS, budgetMs: BUDGET_MS / ROUNDS },
  );
  return { samples, totalMicros };
}

/** The columns take turns, ROUNDS times, so a slower stretch of the machine is shared by all of them. */
async function measure(clients: Record<string, Client>) {
  const measured = Object.fromEntries(
    Object.keys(clients).map((name) => [name, { samples: [] as number[], totalMicros: 0 }]),
  );
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, client] of Object.entries(clients)) {
      const { samples, totalMicros } = await echoes(client, name, round);
      measured[name]!.samples.push(...samples);
      measured[name]!.totalMicros += totalMicros;
    }
  }
  return Object.fromEntries(
    Object.entries(measured).map(([name, { samples, totalMicros }]) => [
      name,
      { samples, perSecond: samples.length / (totalMicros / 1e6) },
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
        const message = `${label}-${session}-${i}`;
        const result = await client.callTool({ name: 'echo', arguments: { message } });
        const text = (result.content as { type: string; text?: string }[])[0]?.text;
        if (text !== `Echo: ${message}`) throw new Error(`${label}: echo answered ${JSON.stringify(result)}`);
        calls += 1;
      }
    }),
  );
  return { calls, micros: (performance.now() - start) * 1000 };
}

/** SESSIONS clients per column, taking turns ROUNDS times as the sequential figures do: calls/s each. */
async function measureConcurrent(columns: Record<string, Client[]>) {
  const totals = Object.fromEntries(Object.keys(columns).map((name) => [name, { calls: 0, micros: 0 }]));
  for (const [name, clients] of Object.entries(columns)) await flood(clients, name, CONCURRENT_WARMUP_MS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, clients] of Object.entries(columns)) {
      const { calls, micros } = await flood(clients, `${name}-${round}`, CONCURRENT_MS);
      totals[name]!.calls += calls;
      totals[name]!.micros += micros;
    }
  }
  return Object.fromEntries(
    Object.entries(totals).map(([name, { calls, micros }]) => [
      name,
      { calls, perSecond: calls / (micros / 1e6) },
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

/** mcp-proxy's library in front of the same upstream over streamable HTTP (its CLI only spawns stdio servers). */
async function startPeer(upstreamUrl: string): Promise<{ url: string; close: () => Promise<void> } | string> {
  let peer: typeof import('mcp-proxy');
  try {
    peer = await import('mcp-proxy');
  } catch (error) {
    return `the mcp-proxy package is not installed (${(error as Error).message.split('\n')[0]})`;
  }
  const upstream = await connect(upstreamUrl);
  const capabilities = upstream.getServerCapabilities() ?? {};
  const port = await freePort();
  const { close } = await peer.startHTTPServer({
    host: '127.0.0.1',
    port,
    apiKey: 'bench-key',
    eventStore: false,
    createServer: async () => {
      const server = new Server(upstream.getServerVersion() ?? { name: 'peer', version: '1' }, {
        capabilities,
      });
      await peer.proxyServer({ client: upstream, server, serverCapabilities: capabilities });
      return server;
    },
  });
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      await close();
      await upstream.close();
    },
  };
}

export async function run(): Promise<{ figures: Figure[]; skipped: Skipped[] }> {
  const skipped: Skipped[] = [];
  const everything = await startEverything();
  // The upstream is on loopback, which the service refuses unless the operator allows it.
  const allowPrivate = process.env.ALLOW_PRIVATE_TARGETS;
  process.env.ALLOW_PRIVATE_TARGETS = 'true';
  let bench: BenchService | undefined;
  const clients: Client[] = [];
  let peer: Awaited<ReturnType<typeof startPeer>> | undefined;
  try {
    bench = await startBenchService();
    const { key } = await bench.workspace({
      members: [{ email: 'admin@bench.test', name: 'Admin', role: 'admin' }],
      mcp_servers: [{ slug: 'everything', name: 'Everything', url: everything.url }],
      tools: [{ connection: 'Everything', tool: 'echo', classification: 'allow' }],
    });

    const direct = await connect(everything.url);
    clients.push(direct);
    const proxied = await connect(`${bench.service.url}/mcp/everything`, { authorization: `Bearer ${key}` });
    clients.push(proxied);
    const version = proxied.getNegotiatedProtocolVersion();
    const columns: Record<string, Client> = { direct, proxy: proxied };

    peer = await startPeer(everything.url);
    if (typeof peer === 'string') {
      skipped.push({ figure: 'echo through mcp-proxy', reason: peer });
    } else {
      columns.peer = await connect(peer.url, { 'x-api-key': 'bench-key' });
      clients.push(columns.peer);
    }

    const measured = await measure(columns);

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
    const concurrentColumns: Record<string, Client[]> = {
      direct: await sessions(everything.url),
      proxy: await sessions(`${bench.service.url}/mcp/everything`, { authorization: `Bearer ${key}` }),
    };
    if (typeof peer !== 'string')
      concurrentColumns.peer = await sessions(peer.url, { 'x-api-key': 'bench-key' });
    const concurrent = await measureConcurrent(concurrentColumns);
    const floor = figures(
      'echo direct to server-everything',
      measured.direct!,
      `the floor: v2 SDK client, one session (${version}), loopback, sequential, ${ROUNDS} rounds taking turns`,
    );
    const through = figures(
      'echo through the proxy',
      measured.proxy!,
      'allowed (classified allow): a hold, its evidence entries and the upstream call, SQLite',
    );
    const result: Figure[] = [...floor, ...through.map((figure, i) => compared(figure, floor[i]!))];
    if (measured.peer) {
      const peered = figures(
        'echo through mcp-proxy (peer)',
        measured.peer,
        'mcp-proxy library (startHTTPServer + proxyServer), API key, no rules, no evidence',
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
    result.push(await durableCommit());
    return { figures: result, skipped };
  } finally {
    for (const client of clients) await client.close().catch(() => undefined);
    if (peer && typeof peer !== 'string') await peer.close().catch(() => undefined);
    await bench?.close();
    await everything.stop();
    if (allowPrivate === undefined) delete process.env.ALLOW_PRIVATE_TARGETS;
    else process.env.ALLOW_PRIVATE_TARGETS = allowPrivate;
  }
}
