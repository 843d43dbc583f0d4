-- The kill switch (docs/security.md, "An admin can stop every agent at once"): while frozen_at is set,
-- every new hold of the workspace is denied with frozen_reason, and no approved MCP call of it is run.
-- frozen_by names who froze it (an app member, an API key, the operator's command line).
ALTER TABLE workspaces ADD COLUMN frozen_at BIGINT;
ALTER TABLE workspaces ADD COLUMN frozen_reason TEXT;
ALTER TABLE workspaces ADD COLUMN frozen_by TEXT;
