-- The inbox reads a workspace's pending holds by deadline. PostgreSQL keeps large values apart from the
-- row (TOAST), so it needs no covering index (which a long approvers list would push past the size a
-- B-tree entry may have).
CREATE INDEX holds_pending_lines ON holds (workspace_id, expires_at) WHERE status = 'pending';
