import type { Sql } from './db.ts';

export type Plan = 'standard' | 'legacy_free';

export interface Workspace {
  id: string;
  slug: string;
  name: string;
  plan: Plan;
  logoUrl: string | null;
  accentColor: string | null;
  createdAt: number;
}

const columns = `id, slug, name, plan, logo_url AS "logoUrl", accent_color AS "accentColor", created_at AS "createdAt"`;

export async function insertWorkspace(sql: Sql, workspace: Workspace): Promise<void> {
  await sql.run(
    'INSERT INTO workspaces (id, slug, name, plan, logo_url, accent_color, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [
      workspace.id,
      workspace.slug,
      workspace.name,
      workspace.plan,
      workspace.logoUrl,
      workspace.accentColor,
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
