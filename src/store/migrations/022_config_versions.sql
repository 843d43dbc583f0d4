-- Optimistic concurrency for workspace configuration (issue 23). Every change that alters the
-- configuration moves the workspace's version by one; each item it altered (a member, a group, a rule,
-- a tool's classification, an MCP server, the webhook, the profile, the Slack channel) keeps the
-- version and the author of its last change, so a save read at an older version is refused only
-- when the item it changes was changed since.
ALTER TABLE workspaces ADD COLUMN config_version INTEGER NOT NULL DEFAULT 0;
CREATE TABLE config_items (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  item TEXT NOT NULL,
  version INTEGER NOT NULL,
  changed_by TEXT NOT NULL,
  changed_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, item)
);
