import type { Environment } from '../domain/hold.ts';
import type { Sql } from './db.ts';

export interface ApiKey {
  id: string;
  workspaceId: string;
  env: Environment;
  name: string | null;
  keyHash: string;
  createdAt: number;
  revokedAt: number | null;
}

const columns = `id, workspace_id AS "workspaceId", env, name, key_hash AS "keyHash", created_at AS "createdAt", revoked_at AS "revokedAt"`;

export async function insertApiKey(sql: Sql, key: ApiKey): Promise<void> {
  await sql.run(
    'INSERT INTO api_keys (id, workspace_id, env, name, key_hash, created_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, NULL)',
    [key.id, key.workspaceId, key.env, key.name, key.keyHash, key.createdAt],
  );
}

export const findApiKeyByHash = (sql: Sql, keyHash: string) =>
  sql.one<ApiKey>(`SELECT ${columns} FROM api_keys WHERE key_hash = $1`, [keyHash]);

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
