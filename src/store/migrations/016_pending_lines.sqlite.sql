-- The inbox and the count every page shows read a workspace's pending holds as lines. This index holds
-- every column they read, so SQLite answers from it alone: reading a column stored after a large
-- `arguments` walks that value's overflow pages, a megabyte for each hold.
CREATE INDEX holds_pending_lines ON holds (workspace_id, expires_at, id, status, environment, connection,
  tool_name, agent_id, agent_label, rule_name, approvers, approvals_required, approvals_received, created_at,
  verdict, channel, decided_at, arguments_summary, arguments_size) WHERE status = 'pending';
