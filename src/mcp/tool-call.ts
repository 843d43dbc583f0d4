/**
 * A 2025-era session's tools/call answered without the MCP SDK's per-request server: the proxy's
 * busiest request (every call of every agent) costs no server, transport or web stream of its own.
 * Only a request the SDK's transport would take as it is comes here (`isDirectToolCall`); batches,
 * task requests and anything malformed go to the SDK, which answers them as it always has. The
 * answer is the SDK's: one SSE response, `event: message` per JSON-RPC message, the call's
 * progress and the proxy's requests to the client before its result, a keep-alive comment while
 * nothing else is said.
 */
import { PassThrough } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import { ProtocolError, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server';
import { isJsonObject } from '../domain/json-limits.ts';
import type { ProxyAnswer } from '../services/proxy-call.ts';
import type { CallStream } from './proxy-server.ts';

export interface ToolCallMessage {
  jsonrpc: '2.0';
  id: string | number;
  method: 'tools/call';
  params: {
    name: string;
    arguments?: Record<string, unknown>;
    _meta?: { progressToken?: string | number };
  };
}

/** As the SDK's transport keeps a POST's answer stream alive. */
const KEEP_ALIVE_MS = 15_000;

/**
 * Whether the body is one tools/call the SDK would pass to the proxy's handler unchanged: a request
 * id, a tool name, arguments an object if any, a progress token a string or number if any, no task
 * asked for; from a client that takes an event stream, speaking a revision the SDK supports.
 */
export function isDirectToolCall(body: unknown, headers: IncomingHttpHeaders): body is ToolCallMessage {
  if (!isJsonObject(body) || body.method !== 'tools/call') return false;
  const { id, params } = body;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  if (!isJsonObject(params) || typeof params.name !== 'string' || params.task !== undefined) return false;
  if (params.arguments !== undefined && !isJsonObject(params.arguments)) return false;
  const meta = params._meta;
  if (meta !== undefined) {
    if (!isJsonObject(meta)) return false;
    const token = meta.progressToken;
    if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') return false;
  }
  const accept = headers.accept ?? '';
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const version = headers['mcp-protocol-version'];
  return version === undefined || (SUPPORTED_PROTOCOL_VERSIONS as readonly unknown[]).includes(version);
}

const event = (message: object) => `event: message\ndata: ${JSON.stringify(message)}\n\n`;

/**
 * The call's answer. Most calls say nothing before their result, which then goes out as the whole
 * body; the first progress, request or keep-alive starts a stream instead, and the result ends it.
 */
class AnswerStream {
  private stream: PassThrough | null = null;
  private readonly reply: FastifyReply;
  private readonly keepAlive: NodeJS.Timeout;

  constructor(reply: FastifyReply) {
    this.reply = reply;
    reply.code(200).headers({
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    });
    this.keepAlive = setInterval(() => this.write(': keepalive\n\n'), KEEP_ALIVE_MS);
    this.keepAlive.unref();
  }

  write(text: string): void {
    if (!this.stream) {
      this.stream = new PassThrough();
      this.reply.send(this.stream);
    }
    this.stream.write(text);
  }

  end(text: string): FastifyReply {
    clearInterval(this.keepAlive);
    if (!this.stream) return this.reply.send(text);
    this.stream.end(text);
    return this.reply;
  }
}

/**
 * A failure as the SDK's server writes it: `runToolCall` throws only `ProtocolError`s (its fixed
 * texts for anything else), and the code -32002 goes out as -32602, as the SDK's codecs send it.
 */
function wireError(error: unknown) {
  const { code, message, data } =
    error instanceof ProtocolError ? error : new ProtocolError(-32603, 'Internal error');
  return { code: code === -32002 ? -32602 : code, message, ...(data !== undefined ? { data } : {}) };
}

/** Runs the call (`runToolCall`) and answers it on the reply. */
export async function answerToolCall(
  reply: FastifyReply,
  message: ToolCallMessage,
  signal: AbortSignal,
  run: (call: CallStream) => Promise<ProxyAnswer>,
): Promise<FastifyReply> {
  const answer = new AnswerStream(reply);
  const call: CallStream = {
    id: message.id,
    signal,
    notify: async (notification) => answer.write(event({ jsonrpc: '2.0', ...notification })),
    request: async (request) => answer.write(event(request)),
  };
  try {
    const { result } = await run(call);
    return answer.end(event({ result, jsonrpc: '2.0', id: message.id }));
  } catch (error) {
    return answer.end(event({ jsonrpc: '2.0', id: message.id, error: wireError(error) }));
  }
}
