-- OAuth for MCP clients (issue 25). The service is the authorization server of its MCP servers.
-- `oauth_records` holds the protocol's own state (registered clients, interactions, codes, tokens,
-- grants), one row per object as the OAuth library stores it: global, like the library's ids.
-- `oauth_grants` is what a member allowed: one client, one MCP server of one workspace. Its row is
-- what the MCP endpoint checks on every request, and what the Keys page lists and revokes.
CREATE TABLE oauth_records (
  model TEXT NOT NULL,
  id TEXT NOT NULL,
  payload TEXT NOT NULL,
  grant_id TEXT,
  uid TEXT,
  expires_at BIGINT,
  consumed_at BIGINT,
  -- A registered client's own id (not a secret), so that clients nobody uses can be found and deleted.
  client_id TEXT,
  created_at BIGINT NOT NULL,
  PRIMARY KEY (model, id)
);
CREATE INDEX oauth_records_grant ON oauth_records (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX oauth_records_uid ON oauth_records (uid) WHERE uid IS NOT NULL;
CREATE INDEX oauth_records_expiry ON oauth_records (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE oauth_grants (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  mcp_server_id TEXT NOT NULL REFERENCES mcp_servers (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  client_id TEXT NOT NULL,
  client_name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  -- The authorization request it answers: one grant each, however often Allow is sent.
  interaction_uid TEXT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);
CREATE INDEX oauth_grants_workspace ON oauth_grants (workspace_id, created_at);
CREATE UNIQUE INDEX oauth_grants_interaction ON oauth_grants (workspace_id, interaction_uid);

-- Who may allow a client: admins (the default), or approvers too.
ALTER TABLE workspaces ADD COLUMN oauth_grant_role TEXT NOT NULL DEFAULT 'admin'
  CHECK (oauth_grant_role IN ('admin', 'approver'));
