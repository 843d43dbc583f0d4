import type { Sql } from './db.ts';

export interface McpServer {
  id: string;
  workspaceId: string;
  slug: string;
  name: string;
  url: string;
  headersSealed: string;
  /** How long a tools/call may wait for the upstream's answer; its progress restarts the clock. */
  callTimeoutSeconds: number;
  createdAt: number;
}

const columns = `id, workspace_id AS "workspaceId", slug, name, url, headers_sealed AS "headersSealed",
  call_timeout_seconds AS "callTimeoutSeconds", created_at AS "createdAt"`;

export const listMcpServers = (sql: Sql, workspaceId: string) =>
  sql.all<McpServer>(
    `SELECT ${columns} FROM mcp_servers WHERE workspace_id = $1 AND removed_at IS NULL ORDER BY slug`,
    [workspaceId],
  );

export const findMcpServerBySlug = (sql: Sql, workspaceId: string, slug: string) =>
  sql.one<McpServer>(
    `SELECT ${columns} FROM mcp_servers WHERE workspace_id = $1 AND slug = $2 AND removed_at IS NULL`,
    [workspaceId, slug],
  );

export const findMcpServer = (sql: Sql, id: string) =>
  sql.one<McpServer>(`SELECT ${columns} FROM mcp_servers WHERE id = $1`, [id]);

/** Inserts or updates by slug; a removed server declared again comes back with its id. */
export async function upsertMcpServer(sql: Sql, server: McpServer): Promise<void> {
  await sql.run(
    `INSERT INTO mcp_servers (id, workspace_id, slug, name, url, headers_sealed, call_timeout_seconds, created_at, removed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL)
     ON CONFLICT (workspace_id, slug) DO UPDATE SET name = excluded.name, url = excluded.url,
       headers_sealed = excluded.headers_sealed, call_timeout_seconds = excluded.call_timeout_seconds,
       removed_at = NULL`,
    [
      server.id,
      server.workspaceId,
      server.slug,
      server.name,
      server.url,
      server.headersSealed,
      server.callTimeoutSeconds,
      server.createdAt,
    ],
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

export async function insertMcpSession(
  sql: Sql,
  row: { id: string; workspaceId: string; mcpServerId: string; protocolVersion: string; createdAt: number },
): Promise<void> {
  await sql.run(
    'INSERT INTO mcp_sessions (id, workspace_id, mcp_server_id, protocol_version, created_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.workspaceId, row.mcpServerId, row.protocolVersion, row.createdAt],
  );
}

export const findMcpSession = (sql: Sql, id: string) =>
  sql.one<{ workspaceId: string; mcpServerId: string; closedAt: number | null; logLevel: string | null }>(
    'SELECT workspace_id AS "workspaceId", mcp_server_id AS "mcpServerId", closed_at AS "closedAt", log_level AS "logLevel" FROM mcp_sessions WHERE id = $1',
    [id],
  );

export async function setMcpSessionLogLevel(sql: Sql, id: string, level: string): Promise<void> {
  await sql.run('UPDATE mcp_sessions SET log_level = $2 WHERE id = $1', [id, level]);
}

export async function closeMcpSession(sql: Sql, id: string, at: number): Promise<void> {
  await sql.run('UPDATE mcp_sessions SET closed_at = $2 WHERE id = $1 AND closed_at IS NULL', [id, at]);
}
