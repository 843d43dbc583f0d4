-- The MCP proxy: registered upstream servers, their sessions, and what the proxy ran for a hold.
CREATE TABLE mcp_servers (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  slug TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  -- Headers sent upstream (credentials), AES-256-GCM sealed with SECRETS_KEY; never the client's key.
  headers_sealed TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  removed_at BIGINT,
  UNIQUE (workspace_id, slug)
);

-- Sessions of 2025-era MCP clients, shared by every instance.
CREATE TABLE mcp_sessions (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  mcp_server_id TEXT NOT NULL REFERENCES mcp_servers (id),
  protocol_version TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  closed_at BIGINT
);

-- The tool as the upstream describes it (MCP Tool object), kept from the last tools/list.
ALTER TABLE tools ADD COLUMN definition TEXT;

ALTER TABLE holds ADD COLUMN mcp_server_id TEXT REFERENCES mcp_servers (id);
-- Identical calls (server, tool, canonical arguments, session) share a key: one operation.
ALTER TABLE holds ADD COLUMN call_key TEXT;
-- running | executed | failed
ALTER TABLE holds ADD COLUMN execution_status TEXT;
ALTER TABLE holds ADD COLUMN execution_started_at BIGINT;
ALTER TABLE holds ADD COLUMN execution_completed_at BIGINT;
ALTER TABLE holds ADD COLUMN execution_outcome TEXT;
CREATE INDEX holds_by_call_key ON holds (workspace_id, call_key, created_at);
CREATE INDEX holds_to_execute ON holds (created_at) WHERE status = 'approved' AND mcp_server_id IS NOT NULL;
