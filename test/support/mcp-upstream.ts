/**
 * Upstream MCP servers for the proxy tests: the real `@modelcontextprotocol/server-everything` as a
 * child process on a free port (stoppable and restartable on the same port), a tiny recording
 * server of our own (node:http, JSON answers only) that keeps every request's headers and every
 * tools/call it was given, and a 2026-era server on the SDK's handler whose tool list grows.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, Server } from '@modelcontextprotocol/server';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NODE = process.execPath;
const EVERYTHING = `${ROOT}node_modules/@modelcontextprotocol/server-everything/dist/index.js`;

/** A port nobody listens on right now (taken and released at once). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface EverythingUpstream {
  port: number;
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  /** Everything the child printed (stdout and stderr), for failure messages. */
  output(): string;
  /** Starts it again on the same port (after `stop`). */
  start(): Promise<void>;
  /** Kills the child and waits until it is gone and the port no longer answers. */
  stop(): Promise<void>;
}

/** Answers once the HTTP server is up: a GET without a session gets its 400. */
async function waitUntilAnswering(url: string, child: ChildProcess, output: () => string) {
  const until = Date.now() + 15_000;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`server-everything exited early:\n${output()}`);
    try {
      const response = await fetch(url, { method: 'GET', signal: AbortSignal.timeout(1000) });
      await response.arrayBuffer();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  throw new Error(`server-everything did not answer at ${url}:\n${output()}`);
}

export async function startEverything(): Promise<EverythingUpstream> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/mcp`;
  let child: ChildProcess | undefined;
  let log = '';
  const output = () => log.slice(-4000);

  const upstream: EverythingUpstream = {
    port,
    url,
    output,
    async start() {
      if (child) throw new Error('server-everything is already running');
      const started = spawn(NODE, [EVERYTHING, 'streamableHttp'], {
        cwd: ROOT,
        env: { ...process.env, PORT: String(port), NODE_OPTIONS: '' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = started;
      // Should the test process end without `stop`, the child goes with it.
      const kill = () => started.kill('SIGKILL');
      process.once('exit', kill);
      started.once('exit', () => process.off('exit', kill));
      started.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      started.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
      try {
        await waitUntilAnswering(url, started, output);
      } catch (error) {
        await upstream.stop();
        throw error;
      }
    },
    async stop() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = once(running, 'exit');
      running.kill('SIGKILL');
      await exited;
    },
  };
  await upstream.start();
  return upstream;
}

export interface RecordedRequest {
  method: string;
  headers: http.IncomingHttpHeaders;
  body: { id?: unknown; method?: string; params?: Record<string, unknown> } | undefined;
}

export interface RecordingUpstream {
  url: string;
  /** Every HTTP request it received, oldest first. */
  requests: RecordedRequest[];
  /** The arguments of every tools/call, oldest first. */
  calls: { name: string; arguments: Record<string, unknown> }[];
  close(): Promise<void>;
}

/**
 * Just enough MCP (2025-era streamable HTTP, JSON answers, no sessions) for a proxy to list and
 * call two tools: `record {text}`, which answers `recorded: <text>`, and `wait`, which answers only
 * when its request is cancelled (`notifications/cancelled`).
 */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const calls: RecordingUpstream['calls'] = [];
  const waiting = new Map<string, http.ServerResponse>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: RecordedRequest['body'];
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = undefined;
      }
      requests.push({ method: request.method!, headers: request.headers, body });
      if (request.method !== 'POST' || !body) {
        response.writeHead(405, { Allow: 'POST' }).end();
        return;
      }
      const { id, method, params } = body as { id?: unknown; method?: string; params?: any };
      if (id === undefined) {
        if (method === 'notifications/cancelled') {
          const key = JSON.stringify(params?.requestId);
          waiting
            .get(key)
            ?.writeHead(200, { 'Content-Type': 'application/json' })
            .end(
              JSON.stringify({
                jsonrpc: '2.0',
                id: params?.requestId,
                error: { code: -32000, message: 'cancelled' },
              }),
            );
          waiting.delete(key);
        }
        response.writeHead(202).end();
        return;
      }
      if (method === 'tools/call' && params?.name === 'wait') {
        calls.push({ name: 'wait', arguments: params?.arguments ?? {} });
        waiting.set(JSON.stringify(id), response);
        return;
      }
      let result: unknown;
      if (method === 'initialize') {
        result = {
          protocolVersion: params?.protocolVersion ?? '2025-06-18',
          capabilities: { tools: {} },
          serverInfo: { name: 'recording-upstream', version: '1' },
        };
      } else if (method === 'tools/list') {
        result = {
          tools: [
            {
              name: 'record',
              description: 'Records its argument',
              inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
            },
            { name: 'wait', description: 'Answers when cancelled', inputSchema: { type: 'object' } },
          ],
        };
      } else if (method === 'tools/call') {
        calls.push({ name: params?.name, arguments: params?.arguments ?? {} });
        result = { content: [{ type: 'text', text: `recorded: ${String(params?.arguments?.text)}` }] };
      } else if (method === 'ping') {
        result = {};
      }
      const answer =
        result === undefined
          ? { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }
          : { jsonrpc: '2.0', id, result };
      response.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface ChangingUpstream {
  url: string;
  close(): Promise<void>;
}

/**
 * A 2026-era upstream built on the SDK's own handler (`createMcpHandler`): tool `grow` adds a tool
 * and announces it with `notifications/tools/list_changed` to every open `subscriptions/listen`.
 */
export async function startChangingUpstream(): Promise<ChangingUpstream> {
  const tools = [{ name: 'grow', description: 'Adds a tool', inputSchema: { type: 'object' as const } }];
  const handler = createMcpHandler(() => {
    const server = new Server(
      { name: 'changing-upstream', version: '1' },
      { capabilities: { tools: { listChanged: true } } },
    );
    server.setRequestHandler('tools/list', () => ({ tools }));
    server.setRequestHandler('tools/call', () => {
      tools.push({ name: `grown-${tools.length}`, description: 'Grown', inputSchema: { type: 'object' } });
      setImmediate(() => handler.notify.toolsChanged());
      return { content: [{ type: 'text' as const, text: `now ${tools.length} tools` }] };
    });
    return server;
  });
  const serve = toNodeHandler(handler);
  const server = http.createServer((request, response) => void serve(request, response));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
