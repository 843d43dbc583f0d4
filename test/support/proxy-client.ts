/** A v2 SDK client of the proxy, as an agent connects with an API key. */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

/**
 * A client of `<serviceUrl>/mcp/<slug>` with `key`, added to `clients` (the suite closes them), that
 * has listed the tools, so the upstream's tools are known.
 */
export async function proxyClient(serviceUrl: string, slug: string, key: string, clients: Client[]) {
  const client = new Client({ name: 'proxy-test', version: '1' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${serviceUrl}/mcp/${slug}`), {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    }),
  );
  clients.push(client);
  await client.listTools();
  return client;
}

/**
 * A fetch for a client's transport that says when its standing stream is open: a 2025-era
 * session's GET stream, or a 2026-era `subscriptions/listen`. The proxy registers either before it
 * answers, so from `streamOpen` on, the client hears what the upstream sends on its own.
 */
export function watchingStream(inner: typeof fetch = fetch) {
  let opened = () => {};
  const streamOpen = new Promise<void>((resolve) => (opened = resolve));
  const watched: typeof fetch = async (input, init) => {
    const response = await inner(input, init);
    const method = init?.method ?? 'GET';
    const listen = typeof init?.body === 'string' && init.body.includes('"subscriptions/listen"');
    if (response.ok && (method === 'GET' || (method === 'POST' && listen))) opened();
    return response;
  };
  return { fetch: watched, streamOpen };
}
