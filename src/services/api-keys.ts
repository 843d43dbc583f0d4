/** API keys: `svc_live_` / `svc_test_` + 32 random bytes; only the SHA-256 is stored. */
import type { Environment } from '../domain/hold.ts';
import { base64url, newKeyId, randomBytes } from '../domain/ids.ts';
import {
  type ApiKey,
  type AuthenticatedKey,
  findApiKey,
  type KeyScope,
  findApiKeyCountingHit,
  findApiKeyWithWorkspace,
  insertApiKey,
  listApiKeys,
  markApiKeyRevoked,
} from '../store/api-keys.ts';
import { findMemberByEmail } from '../store/members.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { openChain } from './evidence.ts';
import { equalInConstantTime, sha256Hex } from './hashing.ts';
import type { Requester } from './submit-hold.ts';

const KEY_PATTERN = /^svc_(live|test)_[A-Za-z0-9_-]{43}$/;

/** As long as an agent identity a submission may name (the Hold API's `agent_identity.id`). */
const MAX_AGENT_ID = 200;

export interface CreatedKey {
  id: string;
  key: string;
  env: Environment;
  scope: KeyScope;
  name: string | null;
  /** A bound key's agent identity and its owner's e-mail; null when not bound. */
  agent: string | null;
  owner: string | null;
}

/**
 * A new key, shown this once. `agent` binds it to an agent identity (its holds carry it), `owner` to the
 * member (by e-mail) who owns that agent: the holds are then that member's own requests.
 */
export async function createApiKey(
  ctx: ServiceContext,
  input: {
    workspace: Workspace;
    env: Environment;
    scope?: KeyScope;
    name?: string;
    agent?: string;
    owner?: string;
  },
): Promise<CreatedKey> {
  if (input.name !== undefined && (input.name.length < 1 || input.name.length > 100)) {
    throw invalid('name', 'must be 1-100 characters');
  }
  const agent = input.agent?.trim();
  if (agent !== undefined && (agent.length < 1 || agent.length > MAX_AGENT_ID))
    throw invalid('agent', `must be 1-${MAX_AGENT_ID} characters`);
  // An owner without a fixed agent would still let the caller name any agent: both, or the agent alone.
  if (input.owner !== undefined && agent === undefined)
    throw invalid('agent', 'is required when the key has an owner');
  const plaintext = `svc_${input.env}_${base64url(randomBytes(32))}`;
  const key: ApiKey = {
    id: newKeyId(),
    workspaceId: input.workspace.id,
    env: input.env,
    scope: input.scope ?? 'agent',
    name: input.name ?? null,
    keyHash: sha256Hex(plaintext),
    createdAt: ctx.now(),
    revokedAt: null,
    agentId: agent ?? null,
    ownerId: null,
  };
  let owner: string | null = null;
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, key.workspaceId);
    // Read under the workspace's chain lock, which a change of members takes too.
    if (input.owner !== undefined) {
      const member = await findMemberByEmail(tx, key.workspaceId, input.owner.trim().toLowerCase());
      if (!member) throw invalid('owner', 'is not a member of this workspace');
      key.ownerId = member.id;
      owner = member.email;
    }
    await insertApiKey(tx, key);
    await chain.append('key.created', {
      key_id: key.id,
      env: key.env,
      scope: key.scope,
      name: key.name,
      // A bound key: the agent its holds carry, and whose own requests they are.
      ...(key.agentId !== null ? { agent: key.agentId, owner } : {}),
    });
  });
  return {
    id: key.id,
    key: plaintext,
    env: key.env,
    scope: key.scope,
    name: key.name,
    agent: key.agentId,
    owner,
  };
}

/** Who submits with this key: its binding, if any, decides the agent and whose own request it is. */
export const keyRequester = (key: AuthenticatedKey): Requester => ({
  kind: 'key',
  keyId: key.id,
  agentId: key.agentId,
  owner: key.ownerId !== null && key.ownerEmail !== null ? { id: key.ownerId, email: key.ownerEmail } : null,
});

export async function revokeApiKey(
  ctx: ServiceContext,
  keyId: string,
): Promise<{ id: string; revoked: true }> {
  const key = await findApiKey(ctx.db, keyId);
  if (!key) throw notFound('key');
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, key.workspaceId);
    const current = await findApiKey(tx, keyId);
    if (current?.revokedAt !== null) return; // revoking twice changes nothing
    await markApiKeyRevoked(tx, keyId, ctx.now());
    await chain.append('key.revoked', { key_id: keyId });
  });
  return { id: keyId, revoked: true };
}

export interface Caller {
  workspace: Workspace;
  key: AuthenticatedKey;
}

/** The caller `find` reads by the token's hash, or null for a missing, malformed, unknown or revoked key. */
async function authenticateWith<T extends Caller>(
  token: string | undefined,
  find: (keyHash: string) => Promise<T | undefined>,
): Promise<T | null> {
  if (!token || !KEY_PATTERN.test(token)) return null;
  const keyHash = sha256Hex(token);
  const found = await find(keyHash);
  if (!found || found.key.revokedAt !== null || !equalInConstantTime(found.key.keyHash, keyHash)) return null;
  return found;
}

/** The workspace a bearer token belongs to, or null for a missing, malformed, unknown or revoked key. */
export const authenticate = (ctx: ServiceContext, token: string | undefined) =>
  authenticateWith(token, (keyHash) => findApiKeyWithWorkspace(ctx.db, keyHash));

/**
 * As `authenticate`, and the request counted in a rate window of the key's workspace by the same read
 * (`findApiKeyCountingHit`): `hits` is the window's count so far, null when it was not counted.
 */
export const authenticateCountingHit = (
  ctx: ServiceContext,
  token: string | undefined,
  hit: Parameters<typeof findApiKeyCountingHit>[2],
) => authenticateWith(token, (keyHash) => findApiKeyCountingHit(ctx.db, keyHash, hit));

export type ApiKeySummary = Omit<ApiKey, 'keyHash'> & { ownerEmail: string | null; ownerName: string | null };

/** The keys of a workspace for the app: never the hash, never the plaintext. */
export async function listWorkspaceApiKeys(
  ctx: ServiceContext,
  workspace: Workspace,
): Promise<ApiKeySummary[]> {
  return (await listApiKeys(ctx.db, workspace.id)).map(({ keyHash: _hash, ...key }) => key);
}

/** Revokes a key only if it belongs to the workspace: another workspace's key id is "not found". */
export async function revokeWorkspaceApiKey(
  ctx: ServiceContext,
  workspace: Workspace,
  keyId: string,
): Promise<{ id: string; revoked: true }> {
  const key = await findApiKey(ctx.db, keyId);
  if (!key || key.workspaceId !== workspace.id) throw notFound('key');
  return revokeApiKey(ctx, keyId);
}
