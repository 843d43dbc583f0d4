/**
 * What the MCP endpoint (`endpoint.ts`) checks before a request reaches its MCP server: a method it
 * serves at a well-formed address, a valid credential (whose is it), and a POSTed body that is a
 * JSON-RPC message within the caller's quota of tool calls. Every refusal, and every error of the
 * endpoint, is a JSON-RPC error.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isJSONRPCNotification, isJSONRPCRequest, isJSONRPCResponse } from '@modelcontextprotocol/server';
import { jsonDepth, MAX_JSON_DEPTH } from '../domain/json-limits.ts';
import { ANONYMOUS_LIMIT, limitMcpCalls } from '../web/guard.ts';
import { HttpError } from '../web/errors.ts';
import { checkLimit, type RateCounter } from '../web/rate-limiter.ts';
import { authenticate, keyRequester } from '../services/api-keys.ts';
import { authenticateOAuth, MCP_SCOPE } from '../services/oauth.ts';
import { SLUG_PATTERN } from '../services/workspaces.ts';
import type { Environment } from '../domain/hold.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from '../services/context.ts';
import { describeSafely, isStorageUnavailable } from '../services/errors.ts';
import type { Requester } from '../services/submit-hold.ts';

/** The address of an MCP server: `/mcp/<server>`, or `/mcp/<workspace>/<server>`. */
export interface McpParams {
  workspace?: string;
  slug: string;
}

const MAX_MESSAGE_DEPTH = MAX_JSON_DEPTH + 8;
/** The methods the endpoint serves; any other gets 405 (with a JSON-RPC body, as every error here). */
export const SERVED = ['GET', 'POST', 'DELETE'];
/** As many messages as the MCP SDK takes in one batch. */
const MAX_BATCH = 100;

/**
 * Every error of the endpoint is a JSON-RPC error with `id: null`, in the MCP SDK's own codes and
 * HTTP statuses (decisions.md, amendments). Messages are fixed texts: never a value from the request.
 */
export function jsonRpcError(
  reply: FastifyReply,
  status: number,
  code: number,
  message: string,
  data?: Record<string, unknown>,
) {
  return reply
    .code(status)
    .type('application/json')
    .send({ jsonrpc: '2.0', error: { code, message, ...(data ? { data } : {}) }, id: null });
}

/**
 * What Fastify refuses before the handler runs (the body's media type, size and JSON), and what the
 * handler throws, as JSON-RPC errors: for the MCP route only, the Core API keeps its own shapes.
 */
export function mcpErrorHandler(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  const code = (error as FastifyError).code;
  if ((error instanceof HttpError && error.code === 'invalid_json') || code === 'FST_ERR_CTP_EMPTY_JSON_BODY')
    return jsonRpcError(reply, 400, -32700, 'Parse error: Invalid JSON');
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return jsonRpcError(reply, 415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return jsonRpcError(reply, 413, -32000, 'Payload Too Large: Request body must not exceed 1 MiB');
  if (isStorageUnavailable(error)) {
    request.log.warn(describeSafely(error.cause), 'storage unavailable');
    reply.header('Retry-After', '5');
    return jsonRpcError(reply, 503, -32000, 'Service Unavailable: storage is unreachable, retry later');
  }
  const status = (error as FastifyError).statusCode;
  if (status && status >= 400 && status < 500)
    return jsonRpcError(reply, 400, -32600, 'Invalid Request: the request cannot be read');
  const referenceId = randomUUID();
  request.log.error({ referenceId, ...describeSafely(error) }, 'internal error');
  return jsonRpcError(reply, 500, -32603, 'Internal error', { referenceId });
}

/** A method the endpoint does not serve, or an address no MCP server can have: the reply, once refused. */
export function refuseAddress(request: FastifyRequest<{ Params: McpParams }>, reply: FastifyReply) {
  if (!SERVED.includes(request.method))
    return jsonRpcError(reply.header('Allow', SERVED.join(', ')), 405, -32000, 'Method not allowed');
  const { workspace, slug } = request.params;
  if (workspace !== undefined && (!SLUG_PATTERN.test(workspace) || !SLUG_PATTERN.test(slug)))
    return jsonRpcError(reply, 404, -32000, 'Not found: no such MCP server');
}

/**
 * A request without a valid key or token: 401 with a Bearer challenge, or 429 once its address has
 * guessed too often (the Core API's anonymous quota, 20 a minute per IP). At `/mcp/<server>` the
 * challenge is bare (decisions.md, MCP proxy); at `/mcp/<workspace>/<server>` it names the protected
 * resource metadata, where OAuth clients find the authorization server (RFC 9728).
 */
export async function refuseUnauthenticated(
  counter: RateCounter,
  ctx: ServiceContext,
  request: FastifyRequest<{ Params: McpParams }>,
  reply: FastifyReply,
  token: string | undefined,
) {
  const { workspace, slug } = request.params;
  const challenge =
    workspace === undefined
      ? 'Bearer'
      : `Bearer resource_metadata="${ctx.publicUrl}/.well-known/oauth-protected-resource/mcp/${workspace}/${slug}", scope="${MCP_SCOPE}"${token ? ', error="invalid_token"' : ''}`;
  const limit = await checkLimit(counter, `ip:${request.ip}`, ANONYMOUS_LIMIT, ctx.now());
  reply.header('RateLimit-Limit', String(limit.limit));
  reply.header('RateLimit-Remaining', String(limit.remaining));
  reply.header('RateLimit-Reset', String(limit.resetSeconds));
  if (!limit.allowed) {
    reply.header('Retry-After', String(limit.resetSeconds));
    return jsonRpcError(reply, 429, -32000, 'Rate limited: too many requests without a valid API key');
  }
  reply.header('WWW-Authenticate', challenge);
  return jsonRpcError(reply, 401, -32000, 'Unauthorized: a valid API key is required');
}

/** Who is calling: a workspace's API key, or an OAuth grant for this one MCP server. */
export interface Principal {
  workspace: Workspace;
  environment: Environment;
  /** Whose quota the tool calls count against. */
  quotaKey: string;
  /**
   * The agent identity when the credential fixes it (an OAuth grant); null: `X-Service-Agent`, or
   * a bound key's agent, or `key:<first 12 characters of the key>`.
   */
  agent: { id: string; label: string | null } | null;
  /** What the submissions check and record: the key's binding, or the member who allowed the client. */
  requester: Requester;
}

/**
 * The caller at `/mcp/<server>` (API keys) or `/mcp/<workspace>/<server>` (the workspace's API keys,
 * or an OAuth access token granted for exactly this MCP server).
 */
export async function principalOf(
  ctx: ServiceContext,
  token: string | undefined,
  params: McpParams,
): Promise<Principal | null> {
  const auth = await authenticate(ctx, token);
  if (auth) {
    if (params.workspace !== undefined && auth.workspace.slug !== params.workspace) return null;
    return {
      workspace: auth.workspace,
      environment: auth.key.env,
      quotaKey: `key:${auth.key.id}`,
      agent: null,
      requester: keyRequester(auth.key),
    };
  }
  if (params.workspace === undefined || !token) return null;
  const grant = await authenticateOAuth(ctx, token, {
    workspaceSlug: params.workspace,
    serverSlug: params.slug,
  });
  if (!grant) return null;
  return {
    workspace: grant.workspace,
    environment: 'live',
    quotaKey: `grant:${grant.grant.id}`,
    agent: grant.agent,
    requester: { kind: 'oauth', grantId: grant.grant.id, member: grant.member },
  };
}

/** A refusal as the JSON-RPC error `jsonRpcError` sends. */
export interface RpcRefusal {
  status: number;
  code: number;
  message: string;
}

/**
 * Why a POSTed body is not taken: none, nested too deeply, not JSON-RPC, or more tool calls than the
 * caller's quota has left (its headers then on `reply`); undefined when it is taken. Not the reply
 * itself, which is thenable: an async function returning it would wait for it to be sent.
 */
export async function messageRefusal(
  ctx: ServiceContext,
  counter: RateCounter,
  reply: FastifyReply,
  auth: Principal,
  body: unknown,
): Promise<RpcRefusal | undefined> {
  if (body === undefined) return { status: 400, code: -32700, message: 'Parse error: the body is empty' };
  // Arguments may nest 32 levels (the Core API's limit); a few more for the JSON-RPC envelope.
  if (jsonDepth(body, MAX_MESSAGE_DEPTH) > MAX_MESSAGE_DEPTH)
    return { status: 400, code: -32600, message: 'Invalid Request: the message is nested too deeply' };
  if (!isJsonRpcBody(body))
    return { status: 400, code: -32600, message: 'Invalid Request: not a JSON-RPC message' };
  // Tool calls count, per API key; connecting, listing, notifications and streams do not.
  if (!(await limitMcpCalls(counter, ctx, reply, auth, toolCallsIn(body))))
    return { status: 429, code: -32000, message: 'Rate limited: too many tool calls for this API key' };
}

/** Whether a POSTed body is a JSON-RPC message, or a batch (1-100) of them. */
function isJsonRpcBody(body: unknown): boolean {
  const isMessage = (message: unknown) =>
    isJSONRPCRequest(message) || isJSONRPCNotification(message) || isJSONRPCResponse(message);
  if (!Array.isArray(body)) return isMessage(body);
  return body.length > 0 && body.length <= MAX_BATCH && body.every(isMessage);
}

/** How many tools/call requests a (valid) body carries: what the MCP rate limit counts. */
function toolCallsIn(body: unknown): number {
  const messages = (Array.isArray(body) ? body : [body]) as { method?: unknown; id?: unknown }[];
  return messages.filter((message) => message.method === 'tools/call' && message.id !== undefined).length;
}
