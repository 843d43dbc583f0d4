-- Issue 37: nobody chooses who may not approve.
-- A key may be bound to an agent identity (its holds carry it, whatever the caller names) and to the
-- member who owns that agent (who therefore never approves its holds). Null: not bound.
ALTER TABLE api_keys ADD COLUMN agent_id TEXT;
ALTER TABLE api_keys ADD COLUMN owner_member_id TEXT REFERENCES members (id);
-- The member a hold's requester acts for (a bound key's owner, or the member who allowed the OAuth
-- client): that member may not approve it. Null: nobody's.
ALTER TABLE holds ADD COLUMN requested_for TEXT;
-- `required`: holds from keys not bound to an agent are refused.
ALTER TABLE workspaces ADD COLUMN key_binding TEXT NOT NULL DEFAULT 'optional'
  CHECK (key_binding IN ('optional', 'required'));
-- The inbox reads who a pending hold acts for with its line: the covering index (migration 016) takes
-- the new column too, so that reading it never walks a large `arguments` value's overflow pages.
DROP INDEX holds_pending_lines;
CREATE INDEX holds_pending_lines ON holds (workspace_id, expires_at, id, status, environment, connection,
  tool_name, agent_id, agent_label, rule_name, approvers, approvals_required, approvals_received, created_at,
  verdict, channel, decided_at, arguments_summary, arguments_size, requested_for) WHERE status = 'pending';
