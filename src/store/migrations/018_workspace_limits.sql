-- Each workspace's own rate limits, set by the operator with `approvals workspace limits` (never by the
-- workspace file nor the app): requests a minute per Core API bucket, and MCP tool calls a minute per
-- API key. Null: the deployment's setting (API_RATE_LIMIT, MCP_RATE_LIMIT).
ALTER TABLE workspaces ADD COLUMN api_rate_limit INTEGER;
ALTER TABLE workspaces ADD COLUMN mcp_rate_limit INTEGER;
