/**
 * Who is calling and whether they are over quota, for every /api/v1 request (interface.md,
 * Authentication and Limits). Runs before the body is read.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, type Caller } from '../services/api-keys.ts';
import type { ServiceContext } from '../services/context.ts';
import { sendError } from './errors.ts';
import { checkLimit, type Limit, type RateCounter } from './rate-limiter.ts';

export type Bucket = 'v1' | 'v1-wait' | 'v1-reports' | 'v1-verify' | 'mcp';

export const WORKSPACE_LIMIT = 120;
export const ANONYMOUS_LIMIT = 20;

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
  interface FastifyContextConfig {
    bucket?: Bucket;
  }
}

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header?.match(/^Bearer +(\S+) *$/i);
  return match?.[1];
}

function setLimitHeaders(reply: FastifyReply, limit: Limit) {
  reply.header('RateLimit-Limit', String(limit.limit));
  reply.header('RateLimit-Remaining', String(limit.remaining));
  reply.header('RateLimit-Reset', String(limit.resetSeconds));
  if (!limit.allowed) reply.header('Retry-After', String(limit.resetSeconds));
}

/** Requests without a valid key share the client IP's small quota, status pages included. */
export async function limitAnonymous(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const limit = await checkLimit(counter, `ip:${request.ip}`, ANONYMOUS_LIMIT, ctx.now());
  setLimitHeaders(reply, limit);
  if (!limit.allowed) sendError(reply, 429, 'rate_limited');
  return limit.allowed;
}

/** A request without a valid credential: 401, or 429 once its address has guessed too often. */
export async function refuseUnauthenticated(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  if (await limitAnonymous(counter, ctx, request, reply)) sendError(reply, 401, 'unauthorized');
}

/** Returns true when the request may go on; otherwise the answer (401 or 429) has been sent. */
export async function guardApi(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  bucket: Bucket,
): Promise<boolean> {
  const caller = await authenticate(ctx, bearerToken(request));
  if (!caller) {
    await refuseUnauthenticated(counter, ctx, request, reply);
    return false;
  }
  request.caller = caller;
  if (await limitWorkspace(counter, ctx, reply, caller.workspace.id, bucket)) return true;
  sendError(reply, 429, 'rate_limited');
  return false;
}

/** Counts a request in the workspace's bucket and sets the RateLimit headers; false when over quota. */
export async function limitWorkspace(
  counter: RateCounter,
  ctx: ServiceContext,
  reply: FastifyReply,
  workspaceId: string,
  bucket: Bucket,
): Promise<boolean> {
  // MCP clients list, call and poll more than API clients: a bucket of its own, set by MCP_RATE_LIMIT.
  const quota = bucket === 'mcp' ? ctx.mcpRateLimit : WORKSPACE_LIMIT;
  if (quota === 0) return true;
  const limit = await checkLimit(counter, `ws:${workspaceId}:${bucket}`, quota, ctx.now());
  setLimitHeaders(reply, limit);
  return limit.allowed;
}
