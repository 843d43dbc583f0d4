-- What the client of a 2025-era MCP session declared at initialize (`capabilities`, as JSON): the
-- proxy asks it for an approval only when it takes elicitation. Null: sessions opened before.
ALTER TABLE mcp_sessions ADD COLUMN client_capabilities TEXT;
