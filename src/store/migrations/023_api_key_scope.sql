-- What a key may do (issue 24): `agent` keys call the Core API; `admin` keys may also read and
-- apply the workspace's configuration, simulate drafts and list its holds.
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'agent' CHECK (scope IN ('agent', 'admin'));
