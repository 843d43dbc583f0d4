-- History counts every matching hold by outcome (status, verdict, channel) and pages by number: SQLite
-- stores a row's columns in order, and those come after `arguments`, reached only by walking a large
-- value's overflow pages. The keyset index (migration 009) takes them too, so the counts and the pages
-- are read from it; it serves every query it served before, so holds keep one index, not two.
DROP INDEX holds_by_workspace_created_id;
CREATE INDEX holds_by_workspace_created_id ON holds (workspace_id, created_at, id, status, verdict, channel);
