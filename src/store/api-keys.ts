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
  /** A bound key's agent identity: every hold it submits carries it. Null: the caller names its agent. */
  agentId: string | null;
  /** The member who owns a bound key's agent: its holds are their own requests. */
  ownerId: string | null;
}

/** A key as the service reads it to authenticate: with its owner's e-mail, for the evidence. */
export interface AuthenticatedKey extends ApiKey {
  ownerEmail: string | null;
}

const columnsOf = (t: string) =>
  `${t}.id, ${t}.workspace_id AS "workspaceId", ${t}.env, ${t}.scope, ${t}.name, ${t}.key_hash AS "keyHash",
  ${t}.created_at AS "createdAt", ${t}.revoked_at AS "revokedAt", ${t}.agent_id AS "agentId",
  ${t}.owner_member_id AS "ownerId"`;
const columns = columnsOf('api_keys');

export async function insertApiKey(sql: Sql, key: ApiKey): Promise<void> {
  await sql.run(
    `INSERT INTO api_keys (id, workspace_id, env, scope, name, key_hash, created_at, revoked_at, agent_id, owner_member_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9)`,
    [
      key.id,
      key.workspaceId,
      key.env,
      key.scope,
      key.name,
      key.keyHash,
      key.createdAt,
      key.agentId,
      key.ownerId,
    ],
  );
}

/** The key with this hash and its workspace, in one read (every API request makes it). */
export async function findApiKeyWithWorkspace(
  sql: Sql,
  keyHash: string,
): Promise<{ key: AuthenticatedKey; workspace: Workspace } | undefined> {
  const row = await sql.one<Workspace & { keyId: string; keyHash: string } & KeyFields>(
    `SELECT k.id AS "keyId", k.env AS "keyEnv", k.scope AS "keyScope", k.name AS "keyName", k.key_hash AS "keyHash",
       k.created_at AS "keyCreatedAt", k.revoked_at AS "keyRevokedAt", k.agent_id AS "keyAgentId",
       k.owner_member_id AS "keyOwnerId", o.email AS "keyOwnerEmail", ${workspaceColumns('w')}
     FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id LEFT JOIN members o ON o.id = k.owner_member_id
     WHERE k.key_hash = $1`,
    [keyHash],
  );
  if (!row) return undefined;
  const {
    keyId,
    keyEnv,
    keyScope,
    keyName,
    keyHash: hash,
    keyCreatedAt,
    keyRevokedAt,
    keyAgentId,
    keyOwnerId,
    keyOwnerEmail,
    ...workspace
  } = row;
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
      agentId: keyAgentId,
      ownerId: keyOwnerId,
      ownerEmail: keyOwnerEmail,
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
  keyAgentId: string | null;
  keyOwnerId: string | null;
  keyOwnerEmail: string | null;
};

export const findApiKey = (sql: Sql, id: string) =>
  sql.one<ApiKey>(`SELECT ${columns} FROM api_keys WHERE id = $1 FOR UPDATE`, [id]);

export async function markApiKeyRevoked(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [id, at]);
}

/** A workspace's keys, newest first (the app's key list), each with its owner's e-mail and name. */
export const listApiKeys = (sql: Sql, workspaceId: string) =>
  sql.all<ApiKey & { ownerEmail: string | null; ownerName: string | null }>(
    `SELECT ${columnsOf('k')}, o.email AS "ownerEmail", o.name AS "ownerName"
     FROM api_keys k LEFT JOIN members o ON o.id = k.owner_member_id
     WHERE k.workspace_id = $1 ORDER BY k.created_at DESC, k.id`,
    [workspaceId],
  );
