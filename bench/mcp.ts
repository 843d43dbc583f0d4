/**
 * An allowed tools/call (server-everything's `echo`) through the MCP proxy, beside its floor: the
 * same call made directly to server-everything. Each client is the v2 SDK client on one kept
 * connection (one 2025-era session), calling sequentially. When the `mcp-proxy` package is
 * installed, the same call through it (a peer proxy: no rules, no evidence) is a third column.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { freePort, startEverything } from '../test/support/mcp-upstream.ts';
import { type BenchService, compared, type Figure, percentile, sample, startBenchService } from './lib.ts';

const WARMUP = 200;
const CALLS = 3_000;
const BUDGET_MS = 10_000;
const ROUNDS = 3;

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

type Measured = { samples: number[]; perSecond: number };

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
