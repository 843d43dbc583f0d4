/**
 * The peer proxy of bench/mcp.ts as a process of its own, so its CPU time is its own:
 * `node bench/mcp-peer.ts <upstream url>` puts the `mcp-proxy` package's library (startHTTPServer +
 * proxyServer: its CLI only spawns stdio servers) in front of the upstream over streamable HTTP, with
 * an API key, and prints one JSON line: `{ "url": … }` once it listens, or `{ "skipped": reason }`
 * when the package is not installed. It runs until SIGTERM.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Server } from '@modelcontextprotocol/server';
import { freePort } from '../test/support/mcp-upstream.ts';

/** The key its clients send as `x-api-key`. */
export const PEER_KEY = 'bench-key';

export type PeerStarted = { url: string } | { skipped: string };

async function main(upstreamUrl: string): Promise<void> {
  let peer: typeof import('mcp-proxy');
  try {
    peer = await import('mcp-proxy');
  } catch (error) {
    const reason = `the mcp-proxy package is not installed (${(error as Error).message.split('\n')[0]})`;
    process.stdout.write(`${JSON.stringify({ skipped: reason } satisfies PeerStarted)}\n`);
    return;
  }
  const upstream = new Client({ name: 'bench-peer', version: '1' });
  await upstream.connect(new StreamableHTTPClientTransport(new URL(upstreamUrl)));
  const capabilities = upstream.getServerCapabilities() ?? {};
  const port = await freePort();
  const { close } = await peer.startHTTPServer({
    host: '127.0.0.1',
    port,
    apiKey: PEER_KEY,
    eventStore: false,
    createServer: async () => {
      const server = new Server(upstream.getServerVersion() ?? { name: 'peer', version: '1' }, {
        capabilities,
      });
      await peer.proxyServer({ client: upstream, server, serverCapabilities: capabilities });
      return server;
    },
  });
  process.once('SIGTERM', async () => {
    await close();
    await upstream.close();
    process.exit(0);
  });
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}/mcp` } satisfies PeerStarted)}\n`);
}

if (import.meta.main) await main(process.argv[2]!);
