import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';

export type Plan = 'standard' | 'legacy_free';
export type KeyBinding = 'optional' | 'required';

/** Every column of `workspaces`. */
const workspaces = columns({
  id: text('id'),
  slug: text('slug'),
  name: text('name'),
  plan: text<Plan>('plan'),
  logoUrl: nullable(text('logo_url')),
  accentColor: nullable(text('accent_color')),
  /** The Slack channel id (`C…`) the workspace's waiting holds are posted to; null: none. */
  slackChannel: nullable(text('slack_channel')),
  /** The Teams channel (`19:…@thread.tacv2`) the workspace's waiting holds are posted to; null: none. */
  teamsChannel: nullable(text('teams_channel')),
  /**
   * The operator's override of the Core API quota (requests a minute per bucket) and of the MCP quota
   * (tool calls a minute per API key); null: the deployment's setting. Loaded with every authenticated
   * request, so the rate limits need no query of their own.
   */
  apiRateLimit: nullable(integer('api_rate_limit')),
  mcpRateLimit: nullable(integer('mcp_rate_limit')),
  /** Who may allow an OAuth client to use the workspace's MCP servers: admins, or approvers too. */
  oauthGrantRole: text<'admin' | 'approver'>('oauth_grant_role'),
  /** `required`: holds from API keys not bound to an agent identity are refused (`keys.require_bound`). */
  keyBinding: text<KeyBinding>('key_binding'),
  /** The default reminders (`remind` in the workspace file) as JSON; null: none. */
  remind: nullable(text('remind')),
  /**
   * The kill switch: set while the workspace is frozen (every new hold denied, no approved MCP call
   * run), with the admin's reason and who froze it; null otherwise.
   */
  frozenAt: nullable(integer('frozen_at')),
  frozenReason: nullable(text('frozen_reason')),
  frozenBy: nullable(text('frozen_by')),
  createdAt: integer('created_at'),
});

export type Workspace = RecordOf<typeof workspaces.fields>;

/** A workspace's columns, read from `table` (the table's name, or its alias in a join). */
export const workspaceColumns = (table: string) => workspaces.select(table);

/** A workspace read with `workspaceColumns`. */
export const toWorkspace = (row: Row) => workspaces.decode(row);

export async function insertWorkspace(sql: Sql, workspace: Workspace): Promise<void> {
  // The others keep their defaults: a new workspace's settings are the deployment's.
  const row = workspaces
    .omit('oauthGrantRole', 'keyBinding', 'remind', 'frozenAt', 'frozenReason', 'frozenBy')
    .insert(workspace);
  await sql.run(`INSERT INTO workspaces (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function findWorkspaceBySlug(sql: Sql, slug: string) {
  const row = await sql.one(`SELECT ${workspaces.select()} FROM workspaces WHERE slug = $1`, [slug]);
  return row && toWorkspace(row);
}

export async function findWorkspace(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${workspaces.select()} FROM workspaces WHERE id = $1`, [id]);
  return row && toWorkspace(row);
}

export async function updateWorkspaceProfile(
  sql: Sql,
  id: string,
  profile: { name: string; logoUrl: string | null; accentColor: string | null },
): Promise<void> {
  await sql.run('UPDATE workspaces SET name = $2, logo_url = $3, accent_color = $4 WHERE id = $1', [
    id,
    profile.name,
    profile.logoUrl,
    profile.accentColor,
  ]);
}

export async function updateWorkspaceOAuthGrantRole(sql: Sql, id: string, role: 'admin' | 'approver') {
  await sql.run('UPDATE workspaces SET oauth_grant_role = $2 WHERE id = $1', [id, role]);
}

export async function updateWorkspaceKeyBinding(sql: Sql, id: string, binding: KeyBinding) {
  await sql.run('UPDATE workspaces SET key_binding = $2 WHERE id = $1', [id, binding]);
}

export async function updateWorkspaceRemind(sql: Sql, id: string, remind: string | null): Promise<void> {
  await sql.run('UPDATE workspaces SET remind = $2 WHERE id = $1', [id, remind]);
}

export async function updateWorkspaceSlackChannel(
  sql: Sql,
  id: string,
  channel: string | null,
): Promise<void> {
  await sql.run('UPDATE workspaces SET slack_channel = $2 WHERE id = $1', [id, channel]);
}

export async function updateWorkspaceTeamsChannel(
  sql: Sql,
  id: string,
  channel: string | null,
): Promise<void> {
  await sql.run('UPDATE workspaces SET teams_channel = $2 WHERE id = $1', [id, channel]);
}

/** Sets the rate-limit overrides given (null: back to the deployment's setting); others stay. */
export async function updateWorkspaceRateLimits(
  sql: Sql,
  id: string,
  limits: { apiRateLimit?: number | null; mcpRateLimit?: number | null },
): Promise<void> {
  const { set, params } = workspaces.update(limits, 2);
  if (params.length > 0) await sql.run(`UPDATE workspaces SET ${set} WHERE id = $1`, [id, ...params]);
}

/** Freezes the workspace (`frozen`), or unfreezes it (null). */
export async function updateWorkspaceFrozen(
  sql: Sql,
  id: string,
  frozen: { at: number; reason: string; by: string } | null,
): Promise<void> {
  await sql.run('UPDATE workspaces SET frozen_at = $2, frozen_reason = $3, frozen_by = $4 WHERE id = $1', [
    id,
    frozen?.at ?? null,
    frozen?.reason ?? null,
    frozen?.by ?? null,
  ]);
}

const count = columns({ n: integer('n') });

export const countWorkspaces = async (sql: Sql) =>
  count.decode((await sql.one('SELECT COUNT(*) AS n FROM workspaces'))!).n;
