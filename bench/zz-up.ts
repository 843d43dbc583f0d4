import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { request, Agent } from 'undici';
import { startEverything } from '/work/main/test/support/mcp-upstream.ts';
const everything = await startEverything();
const c = new Client({ name: 'b', version: '1' });
const transport = new StreamableHTTPClientTransport(new URL(everything.url));
await c.connect(transport);
const sid = transport.sessionId!; const ver = c.getNegotiatedProtocolVersion()!;
async function measure(label: string, fn: (i: number) => Promise<void>, n = 3000) {
  for (let i = 0; i < 300; i++) await fn(i);
  const cpu0 = process.cpuUsage(); const t0 = performance.now();
  await Promise.all(Array.from({ length: 8 }, async (_, w) => { for (let i = 0; i < n / 8; i++) await fn(w * 10000 + i); }));
  const cpu = process.cpuUsage(cpu0); const wall = performance.now() - t0;
  console.log(label, 'calls/s', (n / wall * 1000).toFixed(0), 'client CPU µs/call', ((cpu.user + cpu.system) / n).toFixed(0));
}
await measure('sdk', async (i) => { const r = await c.callTool({ name: 'echo', arguments: { message: `m${i}` } }, { onprogress: () => {}, resetTimeoutOnProgress: true, timeout: 60000 }); if (!(r.content as any)[0].text.startsWith('Echo')) throw new Error(); });
const agent = new Agent({ keepAliveTimeout: 30000 });
let id = 1000;
await measure('raw', async (i) => {
  const myId = id++;
  const res = await request(everything.url, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': ver }, body: JSON.stringify({ jsonrpc: '2.0', id: myId, method: 'tools/call', params: { name: 'echo', arguments: { message: `m${i}` }, _meta: { progressToken: myId } } }) });
  const text = await res.body.text();
  const data = text.split('\n').filter((l) => l.startsWith('data: ') && l.length > 6).map((l) => JSON.parse(l.slice(6)));
  const msg = data.find((m) => m.id === myId);
  if (!msg.result.content[0].text.startsWith('Echo')) throw new Error();
});
await measure('sdk', async (i) => { const r = await c.callTool({ name: 'echo', arguments: { message: `m${i}` } }, { onprogress: () => {}, resetTimeoutOnProgress: true, timeout: 60000 }); if (!(r.content as any)[0].text.startsWith('Echo')) throw new Error(); });
await c.close(); await everything.stop(); await agent.close();
