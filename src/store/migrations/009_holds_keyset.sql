-- Keyset paging of a workspace's holds in submission order (the activity report): (created_at, id)
-- is unique, so a page starts exactly after the last row of the previous one.
CREATE INDEX holds_by_workspace_created_id ON holds (workspace_id, created_at, id);
DROP INDEX holds_by_workspace_created;
