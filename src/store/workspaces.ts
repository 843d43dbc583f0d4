import type { Sql } from './db.ts';

export type Plan = 'standard' | 'legacy_free';

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  logoUrl: string | null;
  accentColor: string | null;
  /** The Slack channel id (`C…`) the workspace's waiting holds are posted to; null: none. */
  slackChannel: string | null;
  createdAt: number;
}

const columns = `id, slug, name, plan, logo_url AS "logoUrl", accent_color AS "accentColor",
  slack_channel AS "slackChannel", created_at AS "createdAt"`;

export async function insertWorkspace(sql: Sql, workspace: Workspace): Promise<void> {
  await sql.run(
    `INSERT INTO workspaces (id, slug, name, plan, logo_url, accent_color, slack_channel, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      workspace.id,
      workspace.slug,
      workspace.name,
      workspace.plan,
      workspace.logoUrl,
      workspace.accentColor,
      workspace.slackChannel,
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

export async function updateWorkspaceSlackChannel(
  sql: Sql,
  id: string,
  channel: string | null,
): Promise<void> {
  await sql.run('UPDATE workspaces SET slack_channel = $2 WHERE id = $1', [id, channel]);
}

export const countWorkspaces = async (sql: Sql) =>
  Number((await sql.one<{ n: number }>('SELECT COUNT(*) AS n FROM workspaces'))!.n);
