/** API keys: `svc_live_` / `svc_test_` + 32 random bytes; only the SHA-256 is stored. */
import type { Environment } from '../domain/hold.ts';
import { base64url, newKeyId, randomBytes } from '../domain/ids.ts';
import {
  type ApiKey,
  findApiKey,
  type KeyScope,
  findApiKeyWithWorkspace,
  insertApiKey,
  listApiKeys,
  markApiKeyRevoked,
} from '../store/api-keys.ts';
import type { Workspace } from '../store/workspaces.ts';
import type { ServiceContext } from './context.ts';
import { invalid, notFound } from './errors.ts';
import { openChain } from './evidence.ts';
import { equalInConstantTime, sha256Hex } from './hashing.ts';

const KEY_PATTERN = /^svc_(live|test)_[A-Za-z0-9_-]{43}$/;

export async function createApiKey(
  ctx: ServiceContext,
  input: { workspace: Workspace; env: Environment; scope?: KeyScope; name?: string },
): Promise<{ id: string; key: string; env: Environment; scope: KeyScope; name: string | null }> {
  if (input.name !== undefined && (input.name.length < 1 || input.name.length > 100)) {
    throw invalid('name', 'must be 1-100 characters');
  }
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
  };
  await ctx.db.transaction(async (tx) => {
    const chain = await openChain(tx, ctx, key.workspaceId);
    await insertApiKey(tx, key);
    await chain.append('key.created', { key_id: key.id, env: key.env, scope: key.scope, name: key.name });
  });
  return { id: key.id, key: plaintext, env: key.env, scope: key.scope, name: key.name };
}

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
  key: ApiKey;
}

/** The workspace a bearer token belongs to, or null for a missing, malformed, unknown or revoked key. */
export async function authenticate(ctx: ServiceContext, token: string | undefined): Promise<Caller | null> {
  if (!token || !KEY_PATTERN.test(token)) return null;
  const keyHash = sha256Hex(token);
  const found = await findApiKeyWithWorkspace(ctx.db, keyHash);
  if (!found || found.key.revokedAt !== null || !equalInConstantTime(found.key.keyHash, keyHash)) return null;
  return found;
}

export type ApiKeySummary = Omit<ApiKey, 'keyHash'>;

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
