/**
 * OAuth for MCP clients: the authorization server's own objects (`oauth_records`, one row per
 * object the OAuth library stores: clients, interactions, codes, tokens, its grants), and what
 * members allowed (`oauth_grants`: one client, one MCP server of one workspace).
 */
import type { Sql } from './db.ts';
import type { Role } from './members.ts';
import { type Workspace, workspaceColumns } from './workspaces.ts';

export interface OAuthRecord {
  payload: Record<string, unknown>;
  consumedAt: number | null;
}

export async function upsertOAuthRecord(
  sql: Sql,
  model: string,
  id: string,
  record: {
    payload: string;
    grantId: string | null;
    uid: string | null;
    clientId: string | null;
    expiresAt: number | null;
    /** A registered client: the address it registered from. */
    registeredFrom?: string | null;
    now: number;
  },
): Promise<void> {
  await sql.run(
    `INSERT INTO oauth_records (model, id, payload, grant_id, uid, client_id, expires_at, consumed_at, created_at,
       registered_from)
     VALUES ($1, $2, $3, $4, $5, $6, $7, NULL, $8, $9)
     ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
       uid = excluded.uid, client_id = excluded.client_id, expires_at = excluded.expires_at`,
    [
      model,
      id,
      record.payload,
      record.grantId,
      record.uid,
      record.clientId,
      record.expiresAt,
      record.now,
      record.registeredFrom ?? null,
    ],
  );
}

/**
 * The clients registered from `address` that no member has allowed yet and that have not expired:
 * how many, and when the first of them expires.
 */
export async function countUnusedOAuthClients(sql: Sql, address: string, now: number) {
  const row = await sql.one<{ count: number | string; soonest: number | string | null }>(
    `SELECT COUNT(*) AS count, MIN(expires_at) AS soonest FROM oauth_records
     WHERE model = 'Client' AND registered_from = $1 AND expires_at > $2`,
    [address, now],
  );
  return { count: Number(row?.count ?? 0), soonest: row?.soonest == null ? null : Number(row.soonest) };
}

/** A member allowed the client: it no longer expires as one never used. */
export const keepOAuthClient = (sql: Sql, clientId: string) =>
  sql.run(
    "UPDATE oauth_records SET expires_at = NULL WHERE model = 'Client' AND client_id = $1 AND expires_at IS NOT NULL",
    [clientId],
  );

type RecordRow = { payload: string; consumedAt: number | null };
const recordOf = (row: RecordRow | undefined): OAuthRecord | undefined =>
  row && {
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    consumedAt: row.consumedAt === null ? null : Number(row.consumedAt),
  };

/** The object, unless it has expired (`now` in ms). */
export async function findOAuthRecord(sql: Sql, model: string, id: string, now: number) {
  return recordOf(
    await sql.one<RecordRow>(
      `SELECT payload, consumed_at AS "consumedAt" FROM oauth_records
       WHERE model = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      [model, id, now],
    ),
  );
}

export async function findOAuthRecordByUid(sql: Sql, model: string, uid: string, now: number) {
  return recordOf(
    await sql.one<RecordRow>(
      `SELECT payload, consumed_at AS "consumedAt" FROM oauth_records
       WHERE model = $1 AND uid = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      [model, uid, now],
    ),
  );
}

/** Marks a code or refresh token used; 0 when it already was (another request used it first). */
export const consumeOAuthRecord = (sql: Sql, model: string, id: string, now: number) =>
  sql.run('UPDATE oauth_records SET consumed_at = $3 WHERE model = $1 AND id = $2 AND consumed_at IS NULL', [
    model,
    id,
    now,
  ]);

/** The grant an object belongs to, expired or used as it may be. */
export const findOAuthRecordGrant = async (sql: Sql, model: string, id: string) =>
  (
    await sql.one<{ grantId: string | null }>(
      'SELECT grant_id AS "grantId" FROM oauth_records WHERE model = $1 AND id = $2',
      [model, id],
    )
  )?.grantId ?? null;

/** The objects of one model that belong to a grant (the library revokes model by model). */
export const destroyOAuthRecordsOfGrant = (sql: Sql, model: string, grantId: string) =>
  sql.run('DELETE FROM oauth_records WHERE model = $1 AND grant_id = $2', [model, grantId]);

export const destroyOAuthRecord = (sql: Sql, model: string, id: string) =>
  sql.run('DELETE FROM oauth_records WHERE model = $1 AND id = $2', [model, id]);

/** Every code and token of a grant, and the grant itself (stored with its own id as `grant_id`). */
export const destroyOAuthGrantRecords = (sql: Sql, grantId: string) =>
  sql.run('DELETE FROM oauth_records WHERE grant_id = $1', [grantId]);

/** Objects whose time is up: a sweep keeps the table to what can still be used. */
export const deleteExpiredOAuthRecords = (sql: Sql, now: number) =>
  sql.run('DELETE FROM oauth_records WHERE expires_at IS NOT NULL AND expires_at <= $1', [now]);

/**
 * Registered clients older than `before` with no grant in force: registration is open to anyone. (One
 * never used expires by its `expires_at`; this finds those used once whose grants have all ended.)
 */
export const deleteUnusedOAuthClients = (sql: Sql, before: number, now: number) =>
  sql.run(
    `DELETE FROM oauth_records WHERE model = 'Client' AND created_at < $1 AND client_id NOT IN
       (SELECT client_id FROM oauth_grants WHERE revoked_at IS NULL AND expires_at > $2)`,
    [before, now],
  );

export interface OAuthGrant {
  id: string;
  workspaceId: string;
  mcpServerId: string;
  memberId: string;
  clientId: string;
  clientName: string;
  createdAt: number;
  expiresAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

const grantColumns = `g.id, g.workspace_id AS "workspaceId", g.mcp_server_id AS "mcpServerId", g.member_id AS "memberId",
  g.client_id AS "clientId", g.client_name AS "clientName", g.created_at AS "createdAt",
  g.expires_at AS "expiresAt", g.last_used_at AS "lastUsedAt", g.revoked_at AS "revokedAt"`;

/** `interactionUid`: the authorization request it answers, which has one grant at most. */
export async function insertOAuthGrant(sql: Sql, grant: OAuthGrant, interactionUid: string): Promise<void> {
  await sql.run(
    `INSERT INTO oauth_grants (id, workspace_id, mcp_server_id, member_id, client_id, client_name, created_at,
       expires_at, interaction_uid, last_used_at, revoked_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL)`,
    [
      grant.id,
      grant.workspaceId,
      grant.mcpServerId,
      grant.memberId,
      grant.clientId,
      grant.clientName,
      grant.createdAt,
      grant.expiresAt,
      interactionUid,
    ],
  );
}

export const findOAuthGrant = (sql: Sql, workspaceId: string, id: string) =>
  sql.one<OAuthGrant>(`SELECT ${grantColumns} FROM oauth_grants g WHERE g.workspace_id = $1 AND g.id = $2`, [
    workspaceId,
    id,
  ]);

/** The workspace of a grant the OAuth library names by its id alone (it revoked the grant). */
export const findOAuthGrantWorkspace = async (sql: Sql, id: string) =>
  (
    await sql.one<{ workspaceId: string }>(
      'SELECT workspace_id AS "workspaceId" FROM oauth_grants WHERE id = $1',
      [id],
    )
  )?.workspaceId;

export interface OAuthGrantListed extends OAuthGrant {
  memberName: string;
  memberEmail: string;
  serverSlug: string;
  serverName: string;
}

/** A workspace's grants in force at `now`, newest first, with the member and the MCP server named. */
export const listOAuthGrants = (sql: Sql, workspaceId: string, now: number) =>
  sql.all<OAuthGrantListed>(
    `SELECT ${grantColumns}, m.name AS "memberName", m.email AS "memberEmail", s.slug AS "serverSlug",
       s.name AS "serverName"
     FROM oauth_grants g JOIN members m ON m.id = g.member_id JOIN mcp_servers s ON s.id = g.mcp_server_id
     WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND g.expires_at > $2 ORDER BY g.created_at DESC, g.id`,
    [workspaceId, now],
  );

/** A workspace's grants in force, with what decides whether they still hold: their member and MCP server. */
export const listOAuthGrantHolders = (sql: Sql, workspaceId: string, now: number) =>
  sql.all<{ id: string; clientId: string; role: Role; memberRemoved: boolean; serverRemoved: boolean }>(
    `SELECT g.id, g.client_id AS "clientId", m.role, m.removed_at IS NOT NULL AS "memberRemoved",
       s.removed_at IS NOT NULL AS "serverRemoved"
     FROM oauth_grants g JOIN members m ON m.id = g.member_id JOIN mcp_servers s ON s.id = g.mcp_server_id
     WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND g.expires_at > $2`,
    [workspaceId, now],
  );

export const markOAuthGrantRevoked = (sql: Sql, workspaceId: string, id: string, now: number) =>
  sql.run(
    'UPDATE oauth_grants SET revoked_at = $3 WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL',
    [workspaceId, id, now],
  );

/** Last use, kept to the minute: a request a second does not write a second. */
export const touchOAuthGrant = (sql: Sql, workspaceId: string, id: string, now: number, stepMs: number) =>
  sql.run(
    `UPDATE oauth_grants SET last_used_at = $3
     WHERE workspace_id = $1 AND id = $2 AND (last_used_at IS NULL OR last_used_at < $4)`,
    [workspaceId, id, now, now - stepMs],
  );
export interface OAuthBearer {
  /** The access token as the OAuth library stored it (`aud`, `scope`, `clientId`, …). */
  token: Record<string, unknown>;
  grant: OAuthGrant;
  workspace: Workspace;
  member: { email: string; name: string };
  serverSlug: string;
}

/**
 * An access token still in force, by the hash it is stored under, with its grant (not revoked), the
 * workspace, the member who granted it (not removed) and the MCP server (not removed), in one read: the
 * MCP endpoint makes it on every request.
 */
export async function findOAuthBearer(
  sql: Sql,
  tokenHash: string,
  now: number,
): Promise<OAuthBearer | undefined> {
  const row = await sql.one<
    Workspace & {
      payload: string;
      grantId: string;
      grantServerId: string;
      grantMemberId: string;
      grantClientId: string;
      grantClientName: string;
      grantCreatedAt: number;
      grantExpiresAt: number;
      grantLastUsedAt: number | null;
      memberEmail: string;
      memberName: string;
      serverSlug: string;
    }
  >(
    `SELECT r.payload, g.id AS "grantId", g.mcp_server_id AS "grantServerId", g.member_id AS "grantMemberId",
       g.client_id AS "grantClientId", g.client_name AS "grantClientName", g.created_at AS "grantCreatedAt",
       g.expires_at AS "grantExpiresAt",
       g.last_used_at AS "grantLastUsedAt", m.email AS "memberEmail", m.name AS "memberName",
       s.slug AS "serverSlug", ${workspaceColumns('w')}
     FROM oauth_records r
       JOIN oauth_grants g ON g.id = r.grant_id AND g.revoked_at IS NULL AND g.expires_at > $2
       JOIN workspaces w ON w.id = g.workspace_id
       JOIN members m ON m.id = g.member_id AND m.removed_at IS NULL
       JOIN mcp_servers s ON s.id = g.mcp_server_id AND s.removed_at IS NULL
     WHERE r.model = 'AccessToken' AND r.id = $1 AND r.expires_at > $2`,
    [tokenHash, now],
  );
  if (!row) return undefined;
  const {
    payload,
    grantId,
    grantServerId,
    grantMemberId,
    grantClientId,
    grantClientName,
    grantCreatedAt,
    grantExpiresAt,
    grantLastUsedAt,
    memberEmail,
    memberName,
    serverSlug,
    ...workspace
  } = row;
  return {
    token: JSON.parse(payload) as Record<string, unknown>,
    grant: {
      id: grantId,
      workspaceId: workspace.id,
      mcpServerId: grantServerId,
      memberId: grantMemberId,
      clientId: grantClientId,
      clientName: grantClientName,
      createdAt: Number(grantCreatedAt),
      expiresAt: Number(grantExpiresAt),
      lastUsedAt: grantLastUsedAt === null ? null : Number(grantLastUsedAt),
      revokedAt: null,
    },
    workspace,
    member: { email: memberEmail, name: memberName },
    serverSlug,
  };
}
