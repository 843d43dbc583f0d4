-- The logging level a 2025-era MCP session asked for (logging/setLevel); null: every message.
ALTER TABLE mcp_sessions ADD COLUMN log_level TEXT;
