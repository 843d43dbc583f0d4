import type { Classification } from '../domain/policy.ts';
import type { Sql } from './db.ts';

export interface Tool {
  workspaceId: string;
  connection: string;
  name: string;
  classification: Classification;
  firstSeenAt: number | null;
}

const columns = `workspace_id AS "workspaceId", connection, name, classification, first_seen_at AS "firstSeenAt"`;

export const findTool = (sql: Sql, workspaceId: string, connection: string, name: string) =>
  sql.one<Tool>(`SELECT ${columns} FROM tools WHERE workspace_id = $1 AND connection = $2 AND name = $3`, [
    workspaceId,
    connection,
    name,
  ]);

export const listTools = (sql: Sql, workspaceId: string) =>
  sql.all<Tool>(`SELECT ${columns} FROM tools WHERE workspace_id = $1 ORDER BY connection, name`, [
    workspaceId,
  ]);

/** The first call of a tool registers it as `new`; a tool classified ahead of use only gets its first-seen time. */
export async function recordToolSeen(
  sql: Sql,
  workspaceId: string,
  connection: string,
  name: string,
  at: number,
) {
  await sql.run(
    `INSERT INTO tools (workspace_id, connection, name, classification, first_seen_at) VALUES ($1, $2, $3, 'new', $4)
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET first_seen_at = $4 WHERE tools.first_seen_at IS NULL`,
    [workspaceId, connection, name, at],
  );
}

export async function classifyTool(
  sql: Sql,
  workspaceId: string,
  connection: string,
  name: string,
  classification: Classification,
) {
  await sql.run(
    `INSERT INTO tools (workspace_id, connection, name, classification, first_seen_at) VALUES ($1, $2, $3, $4, NULL)
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET classification = $4`,
    [workspaceId, connection, name, classification],
  );
}
