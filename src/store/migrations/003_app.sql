-- The app: signed-in sessions, one-time sign-in links, and decision links (/d/<token>).
-- Only SHA-256 hashes of tokens are stored.
CREATE TABLE sessions (
  id_hash TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members (id),
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  csrf_token TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);
CREATE INDEX sessions_by_member ON sessions (member_id);

CREATE TABLE login_tokens (
  token_hash TEXT PRIMARY KEY,
  member_id TEXT NOT NULL REFERENCES members (id),
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);

CREATE TABLE decision_tokens (
  token_hash TEXT PRIMARY KEY,
  hold_id TEXT NOT NULL REFERENCES holds (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  channel TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  used_at BIGINT
);
CREATE INDEX decision_tokens_by_hold ON decision_tokens (hold_id);
