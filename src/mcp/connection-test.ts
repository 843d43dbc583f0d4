/**
 * The admin page's "Test connection": connects to an upstream with a pool of its own (so a test never
 * disturbs the connection calls share), lists its tools, and says how it went in words of our own.
 * Given to the app by the HTTP server (the app does not import the proxy).
 */
import { STATUS_CODES } from 'node:http';
import type { ServiceContext } from '../services/context.ts';
import type { McpConnectionTest } from '../services/mcp-servers.ts';
import type { McpServer } from '../store/mcp-servers.ts';
import { UpstreamPool, UpstreamUnavailable } from './upstream.ts';

const TEST_TIMEOUT_MS = 15_000;
const MAX_PAGES = 20;

type Failure = { message?: unknown; code?: unknown; data?: { status?: unknown }; cause?: unknown };

/** Why a connection failed, in words of our own: never the upstream's answer, never the credentials. */
function failureOf(error: unknown, secrets: string[]): string {
  const chain: Failure[] = [];
  for (let at: unknown = error; at && typeof at === 'object' && chain.length < 6; at = (at as Failure).cause)
    chain.push(at as Failure);
  const status = chain.map((e) => e.data?.status).find((s): s is number => typeof s === 'number');
  // The deepest code is the root cause (ECONNREFUSED under the SDK's ERA_NEGOTIATION_FAILED).
  const code = chain
    .map((e) => e.code)
    .findLast((c): c is string => typeof c === 'string' && /^[A-Z][A-Z0-9_]{1,60}$/.test(c));
  const rpc = chain.map((e) => e.code).find((c): c is number => typeof c === 'number');
  // Only our own messages are shown as they are (UpstreamUnavailable: "the upstream …").
  const ours = error instanceof UpstreamUnavailable ? error.message : null;
  let why: string | null = null;
  if (status !== undefined) {
    const phrase = `HTTP ${status}${STATUS_CODES[status] ? ` ${STATUS_CODES[status]}` : ''}`;
    why =
      status === 401 || status === 403
        ? `it refused the request (${phrase}): check the headers`
        : status === 404 || status === 405
          ? `${phrase}: check the URL's path (often /mcp)`
          : phrase;
  } else if (code === 'ECONNREFUSED') why = 'nothing is listening at that address (connection refused)';
  else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') why = 'its host name cannot be resolved';
  else if (code === 'ECONNRESET') why = 'the connection was reset';
  else if (code && /SSL|TLS|CERT/.test(code)) why = `the TLS connection failed (${code})`;
  else if (code === 'ETIMEDOUT' || rpc === -32001) why = `it did not answer in time`;
  else if (rpc !== undefined) why = `it answered tools/list with JSON-RPC error ${rpc}`;
  else if (code) why = code;
  const base = ours ?? 'the connection to the upstream MCP server failed';
  let text = `${base.charAt(0).toUpperCase()}${base.slice(1)}${why ? `: ${why}` : ''}.`;
  for (const secret of secrets) if (secret.length >= 4) text = text.replaceAll(secret, '…');
  return text;
}

/** Connects with a pool of its own (closed at once), lists every tool, and says how it went. */
export async function testMcpConnection(ctx: ServiceContext, server: McpServer): Promise<McpConnectionTest> {
  const pool = new UpstreamPool({ sealer: ctx.sealer, allowPrivate: ctx.allowPrivateTargets });
  const until = Date.now() + TEST_TIMEOUT_MS;
  try {
    const tools: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const timeout = Math.max(until - Date.now(), 1000);
      const listed = await pool.use(server, (client) =>
        client.listTools(cursor ? { cursor } : undefined, { timeout }),
      );
      tools.push(...listed.tools.map((tool) => String(tool.name)));
      cursor = listed.nextCursor;
      if (!cursor || Date.now() > until) break;
    }
    return { ok: true, tools };
  } catch (error) {
    let secrets: string[] = [];
    try {
      secrets = Object.values(JSON.parse(ctx.sealer.open(server.headersSealed)) as Record<string, string>);
    } catch {
      // nothing to hide
    }
    return { ok: false, message: failureOf(error, secrets) };
  } finally {
    await pool.close();
  }
}
