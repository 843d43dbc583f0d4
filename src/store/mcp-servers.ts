import { columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `mcp_servers`. */
const servers = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  slug: text('slug'),
  name: text('name'),
  url: text('url'),
  headersSealed: text('headers_sealed'),
  /** How long a tools/call may wait for the upstream's answer; its progress restarts the clock. */
  callTimeoutSeconds: integer('call_timeout_seconds'),
  createdAt: integer('created_at'),
  /** Null while the workspace declares it. */
  removedAt: nullable(integer('removed_at')),
});

const serverColumns = servers.omit('removedAt');

export type McpServer = RecordOf<typeof serverColumns.fields>;

export const listMcpServers = async (sql: Sql, workspaceId: string) =>
  serverColumns.decodeAll(
    await sql.all(
      `SELECT ${serverColumns.select()} FROM mcp_servers WHERE workspace_id = $1 AND removed_at IS NULL ORDER BY slug`,
      [workspaceId],
    ),
  );

export async function findMcpServerBySlug(sql: Sql, workspaceId: string, slug: string) {
  const row = await sql.one(
    `SELECT ${serverColumns.select()} FROM mcp_servers WHERE workspace_id = $1 AND slug = $2 AND removed_at IS NULL`,
    [workspaceId, slug],
  );
  return row && serverColumns.decode(row);
}

export async function findMcpServer(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${serverColumns.select()} FROM mcp_servers WHERE id = $1`, [id]);
  return row && serverColumns.decode(row);
}

/** Inserts or updates by slug; a removed server declared again comes back with its id. */
export async function upsertMcpServer(sql: Sql, server: McpServer): Promise<void> {
  const row = servers.insert({ ...server, removedAt: null });
  await sql.run(
    `INSERT INTO mcp_servers (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id, slug) DO UPDATE SET name = excluded.name, url = excluded.url,
       headers_sealed = excluded.headers_sealed, call_timeout_seconds = excluded.call_timeout_seconds,
       removed_at = NULL`,
    row.params,
  );
}

export async function removeMcpServersExcept(sql: Sql, workspaceId: string, keepSlugs: string[], at: number) {
  const removed = (await listMcpServers(sql, workspaceId)).filter(
    (server) => !keepSlugs.includes(server.slug),
  );
  for (const server of removed)
    await sql.run('UPDATE mcp_servers SET removed_at = $2 WHERE id = $1', [server.id, at]);
  return removed;
}

/** Every column of `mcp_sessions`: an MCP client's session with one server. */
const sessions = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  mcpServerId: text('mcp_server_id'),
  protocolVersion: text('protocol_version'),
  createdAt: integer('created_at'),
  closedAt: nullable(integer('closed_at')),
  logLevel: nullable(text('log_level')),
  /** What the client declared at initialize; null for sessions opened before it was kept. */
  clientCapabilities: nullable(json<Record<string, unknown>>('client_capabilities')),
});

export async function insertMcpSession(
  sql: Sql,
  session: Omit<RecordOf<typeof sessions.fields>, 'closedAt' | 'logLevel'>,
): Promise<void> {
  const row = sessions.omit('closedAt', 'logLevel').insert(session);
  await sql.run(`INSERT INTO mcp_sessions (${row.columns}) VALUES ${row.values}`, row.params);
}

const sessionState = sessions.pick(
  'workspaceId',
  'mcpServerId',
  'closedAt',
  'logLevel',
  'clientCapabilities',
);

export async function findMcpSession(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${sessionState.select()} FROM mcp_sessions WHERE id = $1`, [id]);
  return row && sessionState.decode(row);
}

export async function setMcpSessionLogLevel(sql: Sql, id: string, level: string): Promise<void> {
  await sql.run('UPDATE mcp_sessions SET log_level = $2 WHERE id = $1', [id, level]);
}

export async function closeMcpSession(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE mcp_sessions SET closed_at = $2 WHERE id = $1 AND closed_at IS NULL', [id, at]);
}
