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
