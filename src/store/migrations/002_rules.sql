-- The rule set of a workspace, as declared by `approvals apply`; `version` grows with every change,
-- so instances can cache compiled rules and notice a change made elsewhere.
CREATE TABLE rule_sets (
  workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
  version BIGINT NOT NULL,
  rules TEXT NOT NULL
);

CREATE TABLE group_members (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  group_name TEXT NOT NULL,
  member_id TEXT NOT NULL REFERENCES members (id),
  PRIMARY KEY (workspace_id, group_name, member_id)
);

-- Frequency rules count a workspace's recent calls by tool or by agent.
CREATE INDEX holds_by_tool_time ON holds (workspace_id, tool_name, created_at);
CREATE INDEX holds_by_agent_time ON holds (workspace_id, agent_id, created_at);
