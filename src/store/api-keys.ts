import type { Environment } from '../domain/hold.ts';
import type { Sql } from './db.ts';
import { type Workspace, workspaceColumns } from './workspaces.ts';

/** `agent`: the Core API; `admin`: also the workspace's configuration, simulations and hold list. */
export type KeyScope = 'agent' | 'admin';

export interface ApiKey {
  id: string;
  workspaceId: string;
  env: Environment;
  scope: KeyScope;
  name: string | null;
  keyHash: string;
  createdAt: number;
  revokedAt: number | null;
}

const columns = `id, workspace_id AS "workspaceId", env, scope, name, key_hash AS "keyHash", created_at AS "createdAt", revoked_at AS "revokedAt"`;

export async function insertApiKey(sql: Sql, key: ApiKey): Promise<void> {
  await sql.run(
    'INSERT INTO api_keys (id, workspace_id, env, scope, name, key_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL)',
    [key.id, key.workspaceId, key.env, key.scope, key.name, key.keyHash, key.createdAt],
  );
}

/** The key with this hash and its workspace, in one read (every API request makes it). */
export async function findApiKeyWithWorkspace(
  sql: Sql,
  keyHash: string,
): Promise<{ key: ApiKey; workspace: Workspace } | undefined> {
  const row = await sql.one<Workspace & { keyId: string; keyHash: string } & KeyFields>(
    `SELECT k.id AS "keyId", k.env AS "keyEnv", k.scope AS "keyScope", k.name AS "keyName", k.key_hash AS "keyHash",
       k.created_at AS "keyCreatedAt", k.revoked_at AS "keyRevokedAt", ${workspaceColumns('w')}
     FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id WHERE k.key_hash = $1`,
    [keyHash],
  );
  if (!row) return undefined;
  const { keyId, keyEnv, keyScope, keyName, keyHash: hash, keyCreatedAt, keyRevokedAt, ...workspace } = row;
  return {
    key: {
      id: keyId,
      workspaceId: workspace.id,
      env: keyEnv,
      scope: keyScope,
      name: keyName,
      keyHash: hash,
      createdAt: keyCreatedAt,
      revokedAt: keyRevokedAt,
    },
    workspace,
  };
}

type KeyFields = {
  keyEnv: Environment;
  keyScope: KeyScope;
  keyName: string | null;
  keyCreatedAt: number;
  keyRevokedAt: number | null;
};

export const findApiKey = (sql: Sql, id: string) =>
  sql.one<ApiKey>(`SELECT ${columns} FROM api_keys WHERE id = $1 FOR UPDATE`, [id]);

export async function markApiKeyRevoked(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [id, at]);
}

/** A workspace's keys, newest first (the app's key list). */
export const listApiKeys = (sql: Sql, workspaceId: string) =>
  sql.all<ApiKey>(`SELECT ${columns} FROM api_keys WHERE workspace_id = $1 ORDER BY created_at DESC, id`, [
    workspaceId,
  ]);
