/**
 * Who is calling and whether they are over quota, for every /api/v1 request (interface.md,
 * Authentication and Limits), and the signed-in member's own quotas for the app and the widget API.
 * Runs before the body is read.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticate, authenticateCountingHit, type Caller } from '../services/api-keys.ts';
import type { ServiceContext } from '../services/context.ts';
import type { Workspace } from '../store/workspaces.ts';
import { sendError } from './errors.ts';
import { checkLimit, type Limit, limitOf, type RateCounter, SharedRateCounter } from './rate-limiter.ts';

export type Bucket = 'v1' | 'v1-wait' | 'v1-reports' | 'v1-verify';

export const ANONYMOUS_LIMIT = 20;

/** A member's own buckets: people clicking never use the agents' workspace quota, nor the other way round. */
export type MemberBucket = 'app' | 'widget';

// These two belong beside `mcpRateLimit` in ServiceContext (context.ts); declared here for now.
declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
  interface FastifyContextConfig {
    bucket?: Bucket;
    /** Admin-scope keys only (the workspace's configuration); other keys get 403. */
    admin?: boolean;
    /** Takes a YAML body besides JSON (a workspace file). */
    acceptsYaml?: boolean;
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

/** Returns true when the request may go on; otherwise the answer (401, 403 or 429) has been sent. */
export async function guardApi(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  bucket: Bucket,
): Promise<boolean> {
  const admin = request.routeOptions.config.admin === true;
  const { caller, limit } = await callerCounted(counter, ctx, bearerToken(request), bucket, admin);
  if (!caller) {
    await refuseUnauthenticated(counter, ctx, request, reply);
    return false;
  }
  request.caller = caller;
  // Before the quota: an agent key knocking on the admin routes spends none of its workspace's.
  if (admin && caller.key.scope !== 'admin') {
    sendError(reply, 403, 'forbidden');
    return false;
  }
  const counted = limit ?? (await limitWorkspace(counter, ctx, caller.workspace, bucket));
  setLimitHeaders(reply, counted);
  if (counted.allowed) return true;
  sendError(reply, 429, 'rate_limited');
  return false;
}

const WINDOW_MS = 60_000;

/** A workspace's window of a bucket is named `ws:<workspace id>:<bucket>`. */
const workspaceWindow = (bucket: Bucket) => ({ before: 'ws:', after: `:${bucket}` });

/** The quota is the workspace's own (`approvals workspace limits`), else API_RATE_LIMIT. */
const quotaOf = (ctx: ServiceContext, workspace: Workspace) => workspace.apiRateLimit ?? ctx.apiRateLimit;

/**
 * The caller, and where the windows are in the database (PostgreSQL), its request counted in its
 * workspace's bucket by the same read: one round trip for both, instead of one each (no `limit`: not
 * counted yet). A count that fails lets the request through (interface.md, Limits 6): then the key
 * is read again alone, and counted apart.
 */
async function callerCounted(
  counter: RateCounter,
  ctx: ServiceContext,
  token: string | undefined,
  bucket: Bucket,
  admin: boolean,
): Promise<{ caller: Caller | null; limit?: Limit }> {
  if (!(counter instanceof SharedRateCounter)) return { caller: await authenticate(ctx, token) };
  const window = counter.windowAt(WINDOW_MS, ctx.now());
  let found;
  try {
    found = await authenticateCountingHit(ctx, token, {
      ...workspaceWindow(bucket),
      windowStart: window.start,
      adminOnly: admin,
    });
  } catch {
    return { caller: await authenticate(ctx, token) };
  }
  if (!found) return { caller: null };
  const { hits, ...caller } = found;
  if (hits === null) return { caller };
  return { caller, limit: limitOf({ count: hits, resetMs: window.resetMs }, quotaOf(ctx, caller.workspace)) };
}

/** Counts a request in the workspace's bucket; whether it is within the workspace's quota. */
const limitWorkspace = (counter: RateCounter, ctx: ServiceContext, workspace: Workspace, bucket: Bucket) => {
  const { before, after } = workspaceWindow(bucket);
  return checkLimit(
    counter,
    `${before}${workspace.id}${after}`,
    quotaOf(ctx, workspace),
    ctx.now(),
    WINDOW_MS,
  );
};

/**
 * Counts a signed-in member's request in their own bucket, apart from the workspace's API buckets, and
 * sets the RateLimit headers (and Retry-After when over). False when over quota; the caller answers
 * in its own form (an app page, the widget's JSON).
 */
export async function limitMember(
  counter: RateCounter,
  ctx: ServiceContext,
  reply: FastifyReply,
  member: { workspaceId: string; id: string },
  bucket: MemberBucket,
): Promise<boolean> {
  const quota = bucket === 'app' ? ctx.appRateLimit : ctx.widgetRateLimit;
  if (quota === 0) return true;
  const key = `member:${member.workspaceId}:${member.id}:${bucket}`;
  const limit = await checkLimit(counter, key, quota, ctx.now());
  setLimitHeaders(reply, limit);
  return limit.allowed;
}

/**
 * Counts the `calls` tools/call messages of one MCP request against its API key's quota (a minute per
 * key: the workspace's own, else MCP_RATE_LIMIT; other MCP messages are not counted) and sets the
 * RateLimit headers. False as soon as one is over quota: the caller answers with a JSON-RPC error.
 */
export async function limitMcpCalls(
  counter: RateCounter,
  ctx: ServiceContext,
  reply: FastifyReply,
  /** `quotaKey`: whose calls these are (an API key, an OAuth grant). */
  caller: { workspace: Workspace; quotaKey: string },
  calls: number,
): Promise<boolean> {
  const quota = caller.workspace.mcpRateLimit ?? ctx.mcpRateLimit;
  if (quota === 0 || calls === 0) return true;
  let limit: Limit | undefined;
  for (let i = 0; i < calls; i++) {
    limit = await checkLimit(counter, `${caller.quotaKey}:mcp-calls`, quota, ctx.now());
    if (!limit.allowed) break;
  }
  setLimitHeaders(reply, limit!);
  return limit!.allowed;
}
