-- How long the proxy waits for an upstream's answer to a tools/call (progress restarts the clock),
-- per registered MCP server: `call_timeout_seconds` in the workspace file, 1 to 86400, default 900.
ALTER TABLE mcp_servers ADD COLUMN call_timeout_seconds INTEGER NOT NULL DEFAULT 900;
