/**
 * OAuth for MCP clients: the authorization server's own objects (`oauth_records`, one row per
 * object the OAuth library stores: clients, interactions, codes, tokens, its grants), and what
 * members allowed (`oauth_grants`: one client, one MCP server of one workspace).
 */
import { boolean, columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import type { Role } from './members.ts';
import { toWorkspace, type Workspace, workspaceColumns } from './workspaces.ts';

/** Every column of `oauth_records`: one object the OAuth library stores. */
const records = columns({
  model: text('model'),
  id: text('id'),
  /** The object as the library stores it. */
  payload: json<Record<string, unknown>>('payload'),
  grantId: nullable(text('grant_id')),
  uid: nullable(text('uid')),
  clientId: nullable(text('client_id')),
  expiresAt: nullable(integer('expires_at')),
  consumedAt: nullable(integer('consumed_at')),
  createdAt: integer('created_at'),
  /** A registered client: the address it registered from. */
  registeredFrom: nullable(text('registered_from')),
});

const recordColumns = records.pick('payload', 'consumedAt');

export type OAuthRecord = RecordOf<typeof recordColumns.fields>;

export async function upsertOAuthRecord(
  sql: Sql,
  model: string,
  id: string,
  record: Pick<RecordOf<typeof records.fields>, 'payload' | 'grantId' | 'uid' | 'clientId' | 'expiresAt'> & {
    /** A registered client: the address it registered from. */
    registeredFrom?: string | null;
    now: number;
  },
): Promise<void> {
  const { now, registeredFrom = null, ...fields } = record;
  const row = records.insert({ ...fields, model, id, consumedAt: null, createdAt: now, registeredFrom });
  await sql.run(
    `INSERT INTO oauth_records (${row.columns}) VALUES ${row.values}
     ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id,
       uid = excluded.uid, client_id = excluded.client_id, expires_at = excluded.expires_at`,
    row.params,
  );
}

const unusedClients = columns({ count: integer('count'), soonest: nullable(integer('soonest')) });

/**
 * The clients registered from `address` that no member has allowed yet and that have not expired:
 * how many, and when the first of them expires.
 */
export async function countUnusedOAuthClients(sql: Sql, address: string, now: number) {
  const row = await sql.one(
    `SELECT COUNT(*) AS count, MIN(expires_at) AS soonest FROM oauth_records
     WHERE model = 'Client' AND registered_from = $1 AND expires_at > $2`,
    [address, now],
  );
  return unusedClients.decode(row!);
}

/** A member allowed the client: it no longer expires as one never used. */
export const keepOAuthClient = (sql: Sql, clientId: string) =>
  sql.run(
    "UPDATE oauth_records SET expires_at = NULL WHERE model = 'Client' AND client_id = $1 AND expires_at IS NOT NULL",
    [clientId],
  );

const recordOf = (row: Row | undefined) => row && recordColumns.decode(row);

/** The object, unless it has expired (`now` in ms). */
export async function findOAuthRecord(sql: Sql, model: string, id: string, now: number) {
  return recordOf(
    await sql.one(
      `SELECT ${recordColumns.select()} FROM oauth_records
       WHERE model = $1 AND id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      [model, id, now],
    ),
  );
}

export async function findOAuthRecordByUid(sql: Sql, model: string, uid: string, now: number) {
  return recordOf(
    await sql.one(
      `SELECT ${recordColumns.select()} FROM oauth_records
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
export async function findOAuthRecordGrant(sql: Sql, model: string, id: string) {
  const grant = records.pick('grantId');
  const row = await sql.one(`SELECT ${grant.select()} FROM oauth_records WHERE model = $1 AND id = $2`, [
    model,
    id,
  ]);
  return (row && grant.decode(row).grantId) ?? null;
}

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

/** Every column of `oauth_grants`: a member allowed a client one MCP server of the workspace. */
const grants = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  mcpServerId: text('mcp_server_id'),
  memberId: text('member_id'),
  clientId: text('client_id'),
  clientName: text('client_name'),
  createdAt: integer('created_at'),
  expiresAt: integer('expires_at'),
  /** The authorization request it answers, which has one grant at most. */
  interactionUid: text('interaction_uid'),
  lastUsedAt: nullable(integer('last_used_at')),
  revokedAt: nullable(integer('revoked_at')),
});

const grantColumns = grants.omit('interactionUid');

export type OAuthGrant = RecordOf<typeof grantColumns.fields>;

/** `interactionUid`: the authorization request it answers, which has one grant at most. */
export async function insertOAuthGrant(sql: Sql, grant: OAuthGrant, interactionUid: string): Promise<void> {
  const row = grants.insert({ ...grant, interactionUid, lastUsedAt: null, revokedAt: null });
  await sql.run(`INSERT INTO oauth_grants (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function findOAuthGrant(sql: Sql, workspaceId: string, id: string) {
  const row = await sql.one(
    `SELECT ${grantColumns.select('g')} FROM oauth_grants g WHERE g.workspace_id = $1 AND g.id = $2`,
    [workspaceId, id],
  );
  return row && grantColumns.decode(row);
}

/** The workspace of a grant the OAuth library names by its id alone (it revoked the grant). */
export async function findOAuthGrantWorkspace(sql: Sql, id: string) {
  const workspace = grants.pick('workspaceId');
  const row = await sql.one(`SELECT ${workspace.select()} FROM oauth_grants WHERE id = $1`, [id]);
  return row && workspace.decode(row).workspaceId;
}

/** A grant's member and MCP server, by name. */
const grantHolders = columns({
  memberName: text('name'),
  memberEmail: text('email'),
  serverSlug: text('slug'),
  serverName: text('name'),
});

export type OAuthGrantListed = OAuthGrant & RecordOf<typeof grantHolders.fields>;

/** A workspace's grants in force at `now`, newest first, with the member and the MCP server named. */
export const listOAuthGrants = async (sql: Sql, workspaceId: string, now: number) =>
  (
    await sql.all(
      `SELECT ${grantColumns.select('g')}, m.name AS "memberName", m.email AS "memberEmail", s.slug AS "serverSlug",
       s.name AS "serverName"
     FROM oauth_grants g JOIN members m ON m.id = g.member_id JOIN mcp_servers s ON s.id = g.mcp_server_id
     WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND g.expires_at > $2 ORDER BY g.created_at DESC, g.id`,
      [workspaceId, now],
    )
  ).map((row): OAuthGrantListed => ({ ...grantColumns.decode(row), ...grantHolders.decode(row) }));

const grantsInForce = columns({
  id: text('id'),
  clientId: text('client_id'),
  role: text<Role>('role'),
  memberRemoved: boolean('memberRemoved'),
  serverRemoved: boolean('serverRemoved'),
});

/** A workspace's grants in force, with what decides whether they still hold: their member and MCP server. */
export const listOAuthGrantHolders = async (sql: Sql, workspaceId: string, now: number) =>
  grantsInForce.decodeAll(
    await sql.all(
      `SELECT g.id, g.client_id AS "clientId", m.role, m.removed_at IS NOT NULL AS "memberRemoved",
       s.removed_at IS NOT NULL AS "serverRemoved"
     FROM oauth_grants g JOIN members m ON m.id = g.member_id JOIN mcp_servers s ON s.id = g.mcp_server_id
     WHERE g.workspace_id = $1 AND g.revoked_at IS NULL AND g.expires_at > $2`,
      [workspaceId, now],
    ),
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
/** Whose a bearer is: the member who granted it and the MCP server it reaches. */
const bearerOf = columns({ memberEmail: text('email'), memberName: text('name'), serverSlug: text('slug') });

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
  const row = await sql.one(
    `SELECT r.payload, ${grantColumns.select('g', 'grant')}, m.email AS "memberEmail", m.name AS "memberName",
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
  const { memberEmail, memberName, serverSlug } = bearerOf.decode(row);
  return {
    token: records.pick('payload').decode(row).payload,
    grant: grantColumns.decode(row, 'grant'),
    workspace: toWorkspace(row),
    member: { email: memberEmail, name: memberName },
    serverSlug,
  };
}
