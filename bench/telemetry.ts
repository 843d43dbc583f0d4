/**
 * `npm run bench -- telemetry`: what tracing costs a submission (docs/settings.md, "Telemetry"), in
 * the service process's own CPU time (user + system, from /proc/<pid>/stat) per acknowledged hold, on
 * SQLite, autocannon in a process of its own (bench/load.ts). The floor is the service with no OTEL_*
 * settings (tracing off, no SDK started); beside it the same service again, started anew (the run's
 * own noise: tracing off costs nothing measurable when it stays within it), and with tracing on,
 * every span exported over OTLP/HTTP protobuf to a receiver in this process on loopback.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadConfig } from '../src/config.ts';
import { openContext } from '../src/open-context.ts';
import { backends } from '../test/support/backends.ts';
import { killServerProcesses, startServerProcess } from '../test/support/server-process.ts';
import { seed, submitRun } from './holds.ts';
import { compared, cpuMicros, type Figure } from './lib.ts';

const WORKSPACES = 20;
const CONNECTIONS = 8;
const SECONDS = 8;
/** An OTLP/HTTP receiver that accepts every export and counts the bytes. */
async function startReceiver() {
  let bytes = 0;
  const server = http.createServer((request, response) => {
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => response.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, bytes: () => bytes, close: () => server.close() };
}

export async function run() {
  const backend = backends.find((candidate) => candidate.name === 'sqlite')!;
  const storage = await backend.create();
  const settings = { ...storage.env, DATABASE_URL: '', PUBLIC_URL: '' };
  const ctx = await openContext(loadConfig({ ...settings, LOG_LEVEL: 'silent' }));
  const receiver = await startReceiver();
  try {
    const keys = await seed(ctx, WORKSPACES, 'telemetry');
    const target = { kind: 'submit' as const, tool: 'read_balance', keys };
    /** CPU per acknowledged submission of a service started with `env`, after a warm-up. */
    const measure = async (label: string, env: Record<string, string>): Promise<Figure> => {
      // The quota is not what is measured: no run may meet it.
      const service = await startServerProcess(storage, { API_RATE_LIMIT: '1000000', ...env });
      try {
        const spec = { urls: [service.url], connections: CONNECTIONS, seconds: SECONDS, target };
        await submitRun(ctx, { ...spec, seconds: 2 }, `${label}, warm-up`);
        const before = cpuMicros(service.child.pid!);
        const result = await submitRun(ctx, spec, label);
        const acknowledged = result.statuses['201']!;
        return {
          bench: 'telemetry',
          figure: `sqlite: CPU per submission, ${label}`,
          value: (cpuMicros(service.child.pid!) - before) / acknowledged,
          unit: 'µs',
          note: `${acknowledged} submissions, ${CONNECTIONS} connections, ${SECONDS} s`,
        };
      } finally {
        service.child.kill('SIGTERM');
        await service.exited;
      }
    };
    const off = await measure('tracing off', {});
    const on = await measure('tracing on, OTLP to a local receiver', {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.origin,
    });
    if (receiver.bytes() === 0) throw new Error('bench: telemetry: the receiver got no spans');
    const again = await measure('tracing off, again', {});
    return { figures: [off, compared(again, off), compared(on, off)], skipped: [] };
  } finally {
    receiver.close();
    await killServerProcesses();
    await ctx.db.close();
    await storage.drop();
  }
}
