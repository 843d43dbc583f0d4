/**
 * Upstream MCP servers for the proxy tests: the real `@modelcontextprotocol/server-everything` as a
 * child process on a free port (stoppable and restartable on the same port), a tiny recording
 * server of our own (node:http, JSON answers only) that keeps every request's headers and every
 * tools/call it was given, and a 2026-era server on the SDK's handler whose tool list grows. Also
 * a 2026-era server that asks its client for input, and what it takes to run the conformance suite
 * against the proxy.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler, inputRequired, inputResponse, Server } from '@modelcontextprotocol/server';

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
  /** The child's process id while it runs (the benchmarks read its CPU time). */
  pid(): number | undefined;
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
    pid: () => child?.pid,
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

export interface Tap {
  /** `http://127.0.0.1:<port><path of the target>` */
  url: string;
  /** Resolves once a JSON body that `match` accepts has been passed on and the upstream answered it. */
  passed(what: string, match: (body: any) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A relay in front of an upstream at `target`, streaming both ways, that notes every JSON body it
 * passed on once the upstream has answered its request: what the proxy told an upstream, and that
 * it has arrived (for what the upstream does on its own, with no answer to wait for).
 */
export async function startTap(target: string): Promise<Tap> {
  const to = new URL(target);
  const passed: unknown[] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const onward = http.request(
        new URL(request.url ?? '/', to),
        { method: request.method, headers: { ...request.headers, host: to.host } },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
          try {
            passed.push(JSON.parse(body.toString('utf8')));
          } catch {
            return; // not JSON (a GET has no body)
          }
          for (const wake of [...waiters]) wake();
        },
      );
      onward.on('error', () => response.destroy());
      response.on('close', () => onward.destroy());
      onward.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${to.pathname}`,
    passed(what, match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!passed.some(match)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`tap: ${what} did not pass within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
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
  /** Lists these tools too from now on (each answers as `record` does). */
  offer(...names: string[]): void;
  close(): Promise<void>;
}

/**
 * Just enough MCP (2025-era streamable HTTP, JSON answers, no sessions) for a proxy to list and
 * call two tools: `record {text}`, which answers `recorded: <text>`, and `wait`, which answers only
 * when its request is cancelled (`notifications/cancelled`); and any tool `offer` names.
 */
export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const requests: RecordedRequest[] = [];
  const calls: RecordingUpstream['calls'] = [];
  const waiting = new Map<string, http.ServerResponse>();
  const offered: string[] = [];
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
            ...offered.map((name) => ({
              name,
              description: 'Records its argument',
              inputSchema: { type: 'object' },
            })),
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
    offer: (...names: string[]) => void offered.push(...names),
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

/** One tools/call a slow upstream was given, and how it ended there. */
export interface SlowCall {
  /** The `label` argument, to find a test's own call. */
  label: string;
  seconds: number;
  /** Whether it sent progress (asked with `progress: true`, and the request carried a token). */
  progress: boolean;
  /** Whether the request carried a progress token (the proxy asks for progress on every call). */
  progressToken: boolean;
  startedAt: number;
  /** `answered` when it ran to the end, `aborted` when the request was cancelled first. */
  ended?: 'answered' | 'aborted';
}

export interface SlowUpstream {
  url: string;
  /** Every tools/call it was given, oldest first. */
  calls: SlowCall[];
  /** TCP connections it has accepted so far. */
  connections(): number;
  /** The call with this label, once it arrived. */
  call(label: string): SlowCall | undefined;
  close(): Promise<void>;
}

/**
 * An upstream on the SDK's handler with one tool, `slow {label, seconds, progress?}`: it answers
 * after `seconds` (`slept <seconds> s`), sending a progress notification every second when asked to
 * with `progress: true` and given a progress token. A cancelled request stops it early.
 */
export async function startSlowUpstream(): Promise<SlowUpstream> {
  const calls: SlowCall[] = [];
  const handler = createMcpHandler(() => {
    const server = new Server({ name: 'slow-upstream', version: '1' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => ({
      tools: [
        {
          name: 'slow',
          description: 'Answers after a while',
          inputSchema: {
            type: 'object' as const,
            properties: {
              label: { type: 'string' },
              seconds: { type: 'number' },
              progress: { type: 'boolean' },
            },
          },
        },
      ],
    }));
    server.setRequestHandler('tools/call', async (request, context) => {
      const args = (request.params.arguments ?? {}) as {
        label?: string;
        seconds?: number;
        progress?: boolean;
      };
      const token = request.params._meta?.progressToken;
      const seconds = Number(args.seconds ?? 0);
      const call: SlowCall = {
        label: String(args.label ?? ''),
        seconds,
        progress: args.progress === true && token !== undefined,
        progressToken: token !== undefined,
        startedAt: Date.now(),
      };
      calls.push(call);
      const signal = context.mcpReq.signal;
      const until = Date.now() + seconds * 1000;
      let step = 0;
      while (Date.now() < until && !signal.aborted) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(1000, until - Date.now()));
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
        step += 1;
        // One notification per whole second before the end, counted (a timer may fire a little early).
        if (call.progress && step < seconds && !signal.aborted) {
          await context.mcpReq
            .notify({ method: 'notifications/progress', params: { progressToken: token!, progress: step } })
            .catch(() => undefined);
        }
      }
      call.ended = signal.aborted ? 'aborted' : 'answered';
      return { content: [{ type: 'text' as const, text: `slept ${seconds} s` }] };
    });
    return server;
  });
  const serve = toNodeHandler(handler);
  const server = http.createServer((request, response) => void serve(request, response));
  let connections = 0;
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    calls,
    connections: () => connections,
    call: (label) => calls.find((call) => call.label === label),
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- The MCP conformance suite (@modelcontextprotocol/conformance), run against the proxy ----

/** The suite's CLI: `node <CONFORMANCE> server --url <url> -o <dir> [--expected-failures <yml>]`. */
export const CONFORMANCE = `${ROOT}node_modules/@modelcontextprotocol/conformance/dist/index.js`;

/**
 * A loopback relay that adds `Authorization` (the conformance suite has no option for headers) and
 * otherwise makes each request look as if it was sent to the proxy itself: a Host or an Origin that
 * names the relay becomes the proxy's; any other (`evil.example.com`) passes unchanged. Bodies
 * stream both ways.
 */
export async function startKeyRelay(
  target: string,
  key: string,
): Promise<{ url: string; server: http.Server }> {
  const to = new URL(target);
  const server = http.createServer((incoming, outgoing) => {
    const { port } = server.address() as net.AddressInfo;
    const self = `127.0.0.1:${port}`;
    const headers = { ...incoming.headers, authorization: `Bearer ${key}` };
    if (headers.host === self) headers.host = to.host;
    if (headers.origin === `http://${self}`) headers.origin = to.origin;
    const forward = http.request(
      { host: to.hostname, port: to.port, path: to.pathname, method: incoming.method, headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    forward.on('error', () => outgoing.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, server };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runNode(args: string[], env: Record<string, string> = {}, timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { env: { ...process.env, NO_COLOR: '1', ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

export type Outcome = 'pass' | 'fail';

/**
 * The outcome of each scenario from the suite's `checks.json` files, judged as its baseline check
 * judges them: a scenario fails when any check is a FAILURE or a WARNING.
 */
export function scenarioOutcomes(dir: string): Map<string, Outcome> {
  const result = new Map<string, Outcome>();
  for (const entry of readdirSync(dir)) {
    const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
    const file = join(dir, entry, 'checks.json');
    const checks = existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as { status: string }[])
      : [{ status: 'FAILURE' }];
    const failed = checks.some((check) => check.status === 'FAILURE' || check.status === 'WARNING');
    result.set(scenario, failed ? 'fail' : 'pass');
  }
  return result;
}

/** The outcomes of a run directly and of one through the proxy, and a line a scenario for diagnostics. */
export function compareRuns(directDir: string, proxyDir: string) {
  const directly = scenarioOutcomes(directDir);
  const through = scenarioOutcomes(proxyDir);
  const table = [...directly.keys()]
    .map(
      (scenario) =>
        `${scenario}: direct ${directly.get(scenario)}, proxy ${through.get(scenario) ?? 'missing'}`,
    )
    .join('\n');
  return { directly, through, table };
}

export interface AskingUpstream {
  url: string;
  close(): Promise<void>;
}

/**
 * A 2026-era upstream on the SDK's handler whose tool `ask {kind}` needs input from the client,
 * asked the 2026 way (an `input_required` result, then the client calls again with the answer):
 * `roots` (roots/list), `sampling` (sampling/createMessage) or `elicit` (a form). It answers with
 * what the client gave, as JSON text.
 */
export async function startAskingUpstream(): Promise<AskingUpstream> {
  const handler = createMcpHandler(() => {
    const server = new Server({ name: 'asking-upstream', version: '1' }, { capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', () => ({
      tools: [
        {
          name: 'ask',
          description: 'Asks the client',
          inputSchema: { type: 'object' as const, properties: { kind: { type: 'string' } } },
        },
      ],
    }));
    server.setRequestHandler('tools/call', (request, context) => {
      const kind = String(request.params.arguments?.kind ?? 'roots');
      const answer = inputResponse(context.mcpReq.inputResponses, 'q');
      if (answer.kind !== 'missing')
        return { content: [{ type: 'text' as const, text: JSON.stringify(answer) }] };
      const question =
        kind === 'sampling'
          ? inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'Say hi' } }],
              maxTokens: 10,
            })
          : kind === 'elicit'
            ? inputRequired.elicit({
                message: 'Your name?',
                requestedSchema: { type: 'object', properties: { name: { type: 'string' } } },
              })
            : inputRequired.listRoots();
      return inputRequired({ inputRequests: { q: question } });
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
