import type { Sql } from './db.ts';

export type Plan = 'standard' | 'legacy_free';
export type KeyBinding = 'optional' | 'required';

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  logoUrl: string | null;
  accentColor: string | null;
  /** The Slack channel id (`C…`) the workspace's waiting holds are posted to; null: none. */
  slackChannel: string | null;
  /**
   * The operator's override of the Core API quota (requests a minute per bucket) and of the MCP quota
   * (tool calls a minute per API key); null: the deployment's setting. Loaded with every authenticated
   * request, so the rate limits need no query of their own.
   */
  apiRateLimit: number | null;
  mcpRateLimit: number | null;
  /** Who may allow an OAuth client to use the workspace's MCP servers: admins, or approvers too. */
  oauthGrantRole: 'admin' | 'approver';
  /** `required`: holds from API keys not bound to an agent identity are refused (`keys.require_bound`). */
  keyBinding: KeyBinding;
  /** The default reminders (`remind` in the workspace file) as JSON; null: none. */
  remind: string | null;
  createdAt: number;
}

/** A workspace's columns, read from `table` (the table's name, or its alias in a join). */
export const workspaceColumns = (table: string) =>
  `${table}.id, ${table}.slug, ${table}.name, ${table}.plan, ${table}.logo_url AS "logoUrl",
  ${table}.accent_color AS "accentColor", ${table}.slack_channel AS "slackChannel",
  ${table}.api_rate_limit AS "apiRateLimit", ${table}.mcp_rate_limit AS "mcpRateLimit",
  ${table}.oauth_grant_role AS "oauthGrantRole", ${table}.key_binding AS "keyBinding", ${table}.remind, ${table}.created_at AS "createdAt"`;
const columns = workspaceColumns('workspaces');

export async function insertWorkspace(sql: Sql, workspace: Workspace): Promise<void> {
  await sql.run(
    `INSERT INTO workspaces (id, slug, name, plan, logo_url, accent_color, slack_channel, api_rate_limit,
       mcp_rate_limit, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [
      workspace.id,
      workspace.slug,
      workspace.name,
      workspace.plan,
      workspace.logoUrl,
      workspace.accentColor,
      workspace.slackChannel,
      workspace.apiRateLimit,
      workspace.mcpRateLimit,
      workspace.createdAt,
    ],
  );
}

export const findWorkspaceBySlug = (sql: Sql, slug: string) =>
  sql.one<Workspace>(`SELECT ${columns} FROM workspaces WHERE slug = $1`, [slug]);

export const findWorkspace = (sql: Sql, id: string) =>
  sql.one<Workspace>(`SELECT ${columns} FROM workspaces WHERE id = $1`, [id]);

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

/** Sets the rate-limit overrides given (null: back to the deployment's setting); others stay. */
export async function updateWorkspaceRateLimits(
  sql: Sql,
  id: string,
  limits: { apiRateLimit?: number | null; mcpRateLimit?: number | null },
): Promise<void> {
  const sets: string[] = [];
  const params: unknown[] = [id];
  for (const [column, value] of [
    ['api_rate_limit', limits.apiRateLimit],
    ['mcp_rate_limit', limits.mcpRateLimit],
  ] as const) {
    if (value === undefined) continue;
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  }
  if (sets.length > 0) await sql.run(`UPDATE workspaces SET ${sets.join(', ')} WHERE id = $1`, params);
}

export const countWorkspaces = async (sql: Sql) =>
  Number((await sql.one<{ n: number }>('SELECT COUNT(*) AS n FROM workspaces'))!.n);
