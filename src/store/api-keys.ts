import type { Environment } from '../domain/hold.ts';
import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import { countHits } from './rate-windows.ts';
import { toWorkspace, type Workspace, workspaceColumns } from './workspaces.ts';

/** `agent`: the Core API; `admin`: also the workspace's configuration, simulations and hold list. */
export type KeyScope = 'agent' | 'admin';

/** Every column of `api_keys`. */
const apiKeys = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  env: text<Environment>('env'),
  scope: text<KeyScope>('scope'),
  name: nullable(text('name')),
  keyHash: text('key_hash'),
  createdAt: integer('created_at'),
  revokedAt: nullable(integer('revoked_at')),
  /** A bound key's agent identity: every hold it submits carries it. Null: the caller names its agent. */
  agentId: nullable(text('agent_id')),
  /** The member who owns a bound key's agent: its holds are their own requests. */
  ownerId: nullable(text('owner_member_id')),
});

export type ApiKey = RecordOf<typeof apiKeys.fields>;

/** A key's owner, named (a LEFT JOIN of members `o`). */
const owners = columns({ ownerEmail: nullable(text('email')), ownerName: nullable(text('name')) });

/** A key as the service reads it to authenticate: with its owner's e-mail, for the evidence. */
export interface AuthenticatedKey extends ApiKey {
  ownerEmail: string | null;
}

export async function insertApiKey(sql: Sql, key: ApiKey): Promise<void> {
  const row = apiKeys.insert(key);
  await sql.run(`INSERT INTO api_keys (${row.columns}) VALUES ${row.values}`, row.params);
}

/** The read of the key with this hash, with its workspace and its owner's e-mail. */
const apiKeyByHash = `SELECT ${apiKeys.select('k', 'key')}, o.email AS "ownerEmail", ${workspaceColumns('w')}
     FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id LEFT JOIN members o ON o.id = k.owner_member_id
     WHERE k.key_hash = $1`;

const decodeKeyWithWorkspace = (row: Row) => {
  const { ownerEmail } = owners.decode(row);
  return { key: { ...apiKeys.decode(row, 'key'), ownerEmail }, workspace: toWorkspace(row) };
};

/** The key with this hash and its workspace, in one read (every API request makes it). */
export async function findApiKeyWithWorkspace(
  sql: Sql,
  keyHash: string,
): Promise<{ key: AuthenticatedKey; workspace: Workspace } | undefined> {
  const row = await sql.one(apiKeyByHash, [keyHash]);
  return row && decodeKeyWithWorkspace(row);
}

const hits = columns({ hits: nullable(integer('hits')) });

/**
 * As `findApiKeyWithWorkspace`, and in the same statement (PostgreSQL: one round trip) a hit counted in
 * a rate window of the key's workspace, named `<before><workspace id><after>`, when the key is not
 * revoked and, with `adminOnly`, is an admin key. Answers the window's count so far with the key, or
 * null when the hit was not counted.
 */
export async function findApiKeyCountingHit(
  sql: Sql,
  keyHash: string,
  hit: { before: string; after: string; windowStart: number; adminOnly: boolean },
): Promise<{ key: AuthenticatedKey; workspace: Workspace; hits: number | null } | undefined> {
  const row = await sql.one(
    `WITH found AS (${apiKeyByHash}),
     hit AS (${countHits(
       `SELECT $2::text || "key.workspaceId" || $3::text, $4::bigint, 1 FROM found
        WHERE "key.revokedAt" IS NULL AND (NOT $5::boolean OR "key.scope" = 'admin')`,
       '1',
     )})
     SELECT found.*, (SELECT count FROM hit) AS hits FROM found`,
    [keyHash, hit.before, hit.after, hit.windowStart, hit.adminOnly],
  );
  return row && { ...decodeKeyWithWorkspace(row), ...hits.decode(row) };
}

export async function findApiKey(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${apiKeys.select()} FROM api_keys WHERE id = $1 FOR UPDATE`, [id]);
  return row && apiKeys.decode(row);
}

export async function markApiKeyRevoked(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE api_keys SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL', [id, at]);
}

/** A workspace's keys, newest first (the app's key list), each with its owner's e-mail and name. */
export const listApiKeys = async (sql: Sql, workspaceId: string) =>
  (
    await sql.all(
      `SELECT ${apiKeys.select('k')}, o.email AS "ownerEmail", o.name AS "ownerName"
     FROM api_keys k LEFT JOIN members o ON o.id = k.owner_member_id
     WHERE k.workspace_id = $1 ORDER BY k.created_at DESC, k.id`,
      [workspaceId],
    )
  ).map((row) => ({ ...apiKeys.decode(row), ...owners.decode(row) }));
