import type { Classification } from '../domain/policy.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

export interface Tool {
  workspaceId: string;
  connection: string;
  name: string;
  classification: Classification;
  firstSeenAt: number | null;
  /** The MCP Tool object from the upstream's last tools/list (proxy connections only). */
  definition: Record<string, unknown> | null;
}

const columns = `workspace_id AS "workspaceId", connection, name, classification, first_seen_at AS "firstSeenAt", definition`;

type ToolRow = Omit<Tool, 'definition'> & { definition: string | null };
const toTool = (row: ToolRow): Tool => ({
  ...row,
  definition: row.definition === null ? null : JSON.parse(row.definition),
});

export async function findTool(sql: Sql, workspaceId: string, connection: string, name: string) {
  const row = await sql.one<ToolRow>(
    `SELECT ${columns} FROM tools WHERE workspace_id = $1 AND connection = $2 AND name = $3`,
    [workspaceId, connection, name],
  );
  return row && toTool(row);
}

export async function listTools(sql: Sql, workspaceId: string) {
  const rows = await sql.all<ToolRow>(
    `SELECT ${columns} FROM tools WHERE workspace_id = $1 ORDER BY connection, name`,
    [workspaceId],
  );
  return rows.map(toTool);
}

/** A tool an upstream listed: registered as `new` when unknown; its description kept up to date. */
export async function recordDiscoveredTool(
  sql: Sql,
  workspaceId: string,
  connection: string,
  name: string,
  definition: Record<string, unknown>,
): Promise<void> {
  await sql.run(
    `INSERT INTO tools (workspace_id, connection, name, classification, first_seen_at, definition)
     VALUES ($1, $2, $3, 'new', NULL, $4)
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET definition = excluded.definition`,
    [workspaceId, connection, name, JSON.stringify(definition)],
  );
}

/** The first call of a tool registers it as `new`; a tool classified ahead of use only gets its first-seen time. */
/** A tool named for the first time: registered as `new`, or its first sighting noted if classified before. */
export const toolSeenStatement = (
  workspaceId: string,
  connection: string,
  name: string,
  at: number,
): Statement => ({
  text: `INSERT INTO tools (workspace_id, connection, name, classification, first_seen_at) VALUES ($1, $2, $3, 'new', $4)
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET first_seen_at = $4 WHERE tools.first_seen_at IS NULL`,
  params: [workspaceId, connection, name, at],
});

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
