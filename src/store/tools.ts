import type { Classification } from '../domain/policy.ts';
import { columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

/** Every column of `tools`: the tools a workspace's agents call, and how each is classified. */
const tools = columns({
  workspaceId: text('workspace_id'),
  connection: text('connection'),
  name: text('name'),
  classification: text<Classification>('classification'),
  firstSeenAt: nullable(integer('first_seen_at')),
  /** The MCP Tool object from the upstream's last tools/list (proxy connections only). */
  definition: nullable(json<Record<string, unknown>>('definition')),
});

export type Tool = RecordOf<typeof tools.fields>;

export async function findTool(sql: Sql, workspaceId: string, connection: string, name: string) {
  const row = await sql.one(
    `SELECT ${tools.select()} FROM tools WHERE workspace_id = $1 AND connection = $2 AND name = $3`,
    [workspaceId, connection, name],
  );
  return row && tools.decode(row);
}

export async function listTools(sql: Sql, workspaceId: string) {
  const rows = await sql.all(
    `SELECT ${tools.select()} FROM tools WHERE workspace_id = $1 ORDER BY connection, name`,
    [workspaceId],
  );
  return tools.decodeAll(rows);
}

/** A tool an upstream listed: registered as `new` when unknown; its description kept up to date. */
export async function recordDiscoveredTool(
  sql: Sql,
  workspaceId: string,
  connection: string,
  name: string,
  definition: Record<string, unknown>,
): Promise<void> {
  const row = tools.insert({
    workspaceId,
    connection,
    name,
    classification: 'new',
    firstSeenAt: null,
    definition,
  });
  await sql.run(
    `INSERT INTO tools (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET definition = excluded.definition`,
    row.params,
  );
}

/** A tool named for the first time: registered as `new`, or its first sighting noted if classified before. */
export function toolSeenStatement(
  workspaceId: string,
  connection: string,
  name: string,
  at: number,
): Statement {
  const row = tools.insert({
    workspaceId,
    connection,
    name,
    classification: 'new',
    firstSeenAt: at,
    definition: null,
  });
  return {
    text: `INSERT INTO tools (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET first_seen_at = excluded.first_seen_at
       WHERE tools.first_seen_at IS NULL`,
    params: row.params,
  };
}

export async function classifyTool(
  sql: Sql,
  workspaceId: string,
  connection: string,
  name: string,
  classification: Classification,
) {
  const row = tools.insert({
    workspaceId,
    connection,
    name,
    classification,
    firstSeenAt: null,
    definition: null,
  });
  await sql.run(
    `INSERT INTO tools (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id, connection, name) DO UPDATE SET classification = excluded.classification`,
    row.params,
  );
}
