/** A workspace's OpenID Connect client (migration 042): sign-in with the company's identity provider. */
import type { Role } from './members.ts';
import { boolean, columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

const oidcClients = columns({
  workspaceId: text('workspace_id'),
  displayName: text('display_name'),
  issuer: text('issuer'),
  clientId: text('client_id'),
  /** Sealed with SECRETS_KEY; null: a public client (PKCE only). */
  clientSecretSealed: nullable(text('client_secret_sealed')),
  rolesClaim: nullable(text('roles_claim')),
  roles: json<Record<string, Role>>('roles'),
  justInTime: boolean('just_in_time'),
  required: boolean('required'),
  updatedAt: integer('updated_at'),
});

export type OidcClient = RecordOf<typeof oidcClients.fields>;

export async function findOidcClient(sql: Sql, workspaceId: string): Promise<OidcClient | undefined> {
  const row = await sql.one(`SELECT ${oidcClients.select()} FROM oidc_clients WHERE workspace_id = $1`, [
    workspaceId,
  ]);
  return row && oidcClients.decode(row);
}

export async function saveOidcClient(sql: Sql, client: OidcClient): Promise<void> {
  const row = oidcClients.insert(client);
  await sql.run(
    `INSERT INTO oidc_clients (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id) DO UPDATE SET display_name = excluded.display_name, issuer = excluded.issuer,
       client_id = excluded.client_id, client_secret_sealed = excluded.client_secret_sealed,
       roles_claim = excluded.roles_claim, roles = excluded.roles, just_in_time = excluded.just_in_time,
       required = excluded.required, updated_at = excluded.updated_at`,
    row.params,
  );
}

export async function deleteOidcClient(sql: Sql, workspaceId: string): Promise<void> {
  await sql.run('DELETE FROM oidc_clients WHERE workspace_id = $1', [workspaceId]);
}

/** Whether the address was a member of the workspace and was removed: sign-in does not bring them back. */
export async function wasRemovedMember(sql: Sql, workspaceId: string, email: string): Promise<boolean> {
  const row = await sql.one(
    'SELECT 1 AS removed FROM members WHERE workspace_id = $1 AND email = $2 AND removed_at IS NOT NULL',
    [workspaceId, email.toLowerCase()],
  );
  return !!row;
}
