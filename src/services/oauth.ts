/**
 * OAuth for MCP clients: each MCP server of a workspace is a protected resource at
 * `{base_url}/mcp/<workspace>/<server>`, and a member can allow a client (a hosted assistant, a
 * desktop app) to call it on the workspace's behalf. What was allowed is a grant: listed, revocable,
 * each grant and revocation in the evidence. An access token is good for its one resource only.
 */
import { findMember, type Member } from '../store/members.ts';
import { findMcpServerBySlug } from '../store/mcp-servers.ts';
import type { McpServer } from '../store/mcp-servers.ts';
import {
  deleteExpiredOAuthRecords,
  deleteUnusedOAuthClients,
  destroyOAuthGrantRecords,
  findOAuthBearer,
  findOAuthGrant,
  findOAuthGrantWorkspace,
  insertOAuthGrant,
  keepOAuthClient,
  listOAuthGrantHolders,
  listOAuthGrants,
  markOAuthGrantRevoked,
  type OAuthGrant,
  touchOAuthGrant,
} from '../store/oauth.ts';
import { findWorkspace, findWorkspaceBySlug, type Workspace } from '../store/workspaces.ts';
import { type Sql, UniqueViolationError } from '../store/db.ts';
import type { ServiceContext } from './context.ts';
import { notFound, ServiceError } from './errors.ts';
import { type Chain, openChain } from './evidence.ts';
import { sha256Hex } from './hashing.ts';
import { SLUG_PATTERN } from './workspaces.ts';

/** The one scope a token carries: calling the MCP server it was granted for. */
export const MCP_SCOPE = 'mcp';
/** Short-lived: a revoked or lost token is good for at most this long anyway. */
export const ACCESS_TOKEN_SECONDS = 15 * 60;
/** A refresh token unused this long expires (each use gives a new one). */
export const REFRESH_TOKEN_DAYS = 30;
/** However it is used, a grant ends after this long: the client asks a member again. */
export const GRANT_DAYS = 365;
/**
 * A client a member allowed once, that no grant in force names any more, is deleted this long after it
 * registered. (One never allowed expires after a day: oauth-registrations.ts.)
 */
export const CLIENT_UNUSED_DAYS = 30;
/** A client's name as shown and recorded: it is the client's own text. */
const CLIENT_NAME_CHARS = 100;
/** Last use is kept to the minute: a request a second does not write a second. */
const LAST_USE_STEP_MS = 60_000;

/** Tokens, codes and the library's other secrets are stored under their hash, never as they are. */
export const oauthRecordId = (id: string) => sha256Hex(id);

export const mcpResourceUrl = (ctx: ServiceContext, workspaceSlug: string, serverSlug: string) =>
  `${ctx.publicUrl}/mcp/${workspaceSlug}/${serverSlug}`;

/** The workspace and MCP server a resource indicator names, if it names one of ours exactly. */
export async function resolveMcpResource(
  ctx: ServiceContext,
  resource: string,
): Promise<{ workspace: Workspace; server: McpServer } | null> {
  const prefix = `${ctx.publicUrl}/mcp/`;
  if (!resource.startsWith(prefix)) return null;
  const [workspaceSlug, serverSlug, ...rest] = resource.slice(prefix.length).split('/');
  if (rest.length > 0 || !workspaceSlug || !serverSlug) return null;
  if (!SLUG_PATTERN.test(workspaceSlug) || !SLUG_PATTERN.test(serverSlug)) return null;
  const workspace = await findWorkspaceBySlug(ctx.db, workspaceSlug);
  if (!workspace) return null;
  const server = await findMcpServerBySlug(ctx.db, workspace.id, serverSlug);
  return server ? { workspace, server } : null;
}

/** How a client is named on the consent page and in the evidence: its own name, cut short, or its id. */
export const clientNameOf = (client: { clientId: string; clientName?: string }) =>
  (client.clientName ?? client.clientId).slice(0, CLIENT_NAME_CHARS);

/** Admins may allow clients; approvers too when the workspace says so; viewers never. */
export const mayGrantOAuth = (workspace: Workspace, member: Pick<Member, 'role'>) =>
  member.role === 'admin' || (member.role === 'approver' && workspace.oauthGrantRole === 'approver');

/**
 * Records what a member allowed, with its evidence, before the OAuth library saves its grant. Checked
 * again under the workspace's lock, which a configuration change takes too: a member removed or
 * lowered, or a server removed, since the consent page was read cannot grant. One grant per
 * authorization request: a second decision on it is a `conflict`.
 */
export async function recordOAuthGrant(
  ctx: ServiceContext,
  input: {
    grantId: string;
    interactionUid: string;
    workspace: Workspace;
    server: McpServer;
    member: Member;
    client: { id: string; name: string };
  },
): Promise<void> {
  const now = ctx.now();
  const grant: OAuthGrant = {
    id: input.grantId,
    workspaceId: input.workspace.id,
    mcpServerId: input.server.id,
    memberId: input.member.id,
    clientId: input.client.id,
    clientName: input.client.name.slice(0, CLIENT_NAME_CHARS),
    createdAt: now,
    expiresAt: now + GRANT_DAYS * 86_400_000,
    lastUsedAt: null,
    revokedAt: null,
  };
  try {
    await ctx.db.transaction(async (tx) => {
      const chain = await openChain(tx, ctx, grant.workspaceId);
      // One after the other: a transaction is one connection, which runs one statement at a time.
      const workspace = await findWorkspace(tx, grant.workspaceId);
      const member = await findMember(tx, grant.workspaceId, grant.memberId);
      const server = await findMcpServerBySlug(tx, grant.workspaceId, input.server.slug);
      if (!workspace || !member || !mayGrantOAuth(workspace, member) || server?.id !== grant.mcpServerId)
        throw new ServiceError(
          'validation_failed',
          'You may no longer allow this client: the workspace changed.',
        );
      await insertOAuthGrant(tx, grant, input.interactionUid);
      // Allowed: the client no longer expires as a registration nobody used (oauth-registrations.ts).
      await keepOAuthClient(tx, grant.clientId);
      await chain.append('oauth.granted', {
        grant: grant.id,
        client_id: grant.clientId,
        client_name: grant.clientName,
        member: member.email,
        mcp_server: server.slug,
      });
    });
  } catch (error) {
    if (error instanceof UniqueViolationError)
      throw new ServiceError('conflict', 'this authorization request was decided already');
    throw error;
  }
}

/**
 * Ends a grant: its tokens and codes are deleted with it, so the next request with any of them is
 * refused. `by`: the member who revoked it, or `client` when the OAuth library revoked it (the client
 * revoked its token, or a refresh token was used twice).
 */
export async function revokeOAuthGrant(
  ctx: ServiceContext,
  workspaceId: string,
  grantId: string,
  by: { member: string } | 'client',
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, workspaceId);
    const grant = await findOAuthGrant(tx, workspaceId, grantId);
    if (!grant) throw notFound('grant');
    await destroyOAuthGrantRecords(tx, grantId);
    if ((await markOAuthGrantRevoked(tx, workspaceId, grantId, ctx.now())) === 0) return;
    await chain.append('oauth.revoked', {
      grant: grantId,
      client_id: grant.clientId,
      by: by === 'client' ? 'client' : by.member,
    });
  });
}

/**
 * Inside a change of the workspace's configuration: ends the grants that no longer hold, with their
 * evidence. A grant holds while its member is a member who may still grant and its MCP server is
 * still there: a member or server removed and added back later never brings an old grant back.
 */
export async function revokeGrantsNoLongerHeld(
  tx: Sql,
  ctx: ServiceContext,
  chain: Chain,
  workspaceId: string,
) {
  const workspace = await findWorkspace(tx, workspaceId);
  for (const grant of await listOAuthGrantHolders(tx, workspaceId, ctx.now())) {
    const reason = grant.memberRemoved
      ? 'member_removed'
      : grant.serverRemoved
        ? 'mcp_server_removed'
        : !mayGrantOAuth(workspace!, { role: grant.role })
          ? 'member_may_not_grant'
          : null;
    if (!reason) continue;
    await destroyOAuthGrantRecords(tx, grant.id);
    await markOAuthGrantRevoked(tx, workspaceId, grant.id, ctx.now());
    await chain.append('oauth.revoked', { grant: grant.id, client_id: grant.clientId, by: 'config', reason });
  }
}

/** The OAuth library revoked a grant by itself: record it where it belongs, if it is one of ours. */
export async function oauthGrantRevokedByClient(ctx: ServiceContext, grantId: string): Promise<void> {
  const workspaceId = await findOAuthGrantWorkspace(ctx.db, grantId);
  if (workspaceId) await revokeOAuthGrant(ctx, workspaceId, grantId, 'client');
}

export type { OAuthGrantListed } from '../store/oauth.ts';

/**
 * Deletes the OAuth server's objects whose time is up (codes, tokens, interactions), and the clients
 * registered more than CLIENT_UNUSED_DAYS ago that no grant in force names.
 */
export async function sweepExpiredOAuthRecords(ctx: ServiceContext): Promise<void> {
  const now = ctx.now();
  await deleteExpiredOAuthRecords(ctx.db, now);
  await deleteUnusedOAuthClients(ctx.db, now - CLIENT_UNUSED_DAYS * 86_400_000, now);
}

/** A workspace's grants still in force, for the keys page. */
export const oauthGrantsOf = (ctx: ServiceContext, workspaceId: string) =>
  listOAuthGrants(ctx.db, workspaceId, ctx.now());

export interface OAuthCaller {
  workspace: Workspace;
  grant: OAuthGrant;
  /** Names the client and the member who allowed it; rules on `agent` match the id. */
  agent: { id: string; label: string };
  /** The member who allowed the client: it acts for them, so its holds are their own requests. */
  member: { id: string; email: string };
}

/**
 * The grant behind a bearer token at the MCP server `serverSlug` of workspace `workspaceSlug`, or null:
 * unknown, expired, revoked, granted by a member since removed, or meant for another resource.
 */
export async function authenticateOAuth(
  ctx: ServiceContext,
  token: string,
  resource: { workspaceSlug: string; serverSlug: string },
): Promise<OAuthCaller | null> {
  const now = ctx.now();
  const bearer = await findOAuthBearer(ctx.db, oauthRecordId(token), now);
  if (!bearer) return null;
  const { grant, workspace, member } = bearer;
  const scopes = String(bearer.token.scope ?? '').split(' ');
  if (
    workspace.slug !== resource.workspaceSlug ||
    bearer.serverSlug !== resource.serverSlug ||
    bearer.token.aud !== mcpResourceUrl(ctx, resource.workspaceSlug, resource.serverSlug) ||
    !scopes.includes(MCP_SCOPE)
  )
    return null;
  if (grant.lastUsedAt === null || now - grant.lastUsedAt >= LAST_USE_STEP_MS)
    await touchOAuthGrant(ctx.db, workspace.id, grant.id, now, LAST_USE_STEP_MS);
  return {
    workspace,
    grant,
    member: { id: grant.memberId, email: member.email },
    agent: {
      id: `oauth:${member.email}:${grant.clientId}`.slice(0, 200),
      label: `${grant.clientName} (allowed by ${member.name})`.slice(0, 200),
    },
  };
}
