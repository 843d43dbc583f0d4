-- Shared by SQLite and PostgreSQL: times are epoch milliseconds (BIGINT), JSON is text.

CREATE TABLE workspaces (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  plan TEXT NOT NULL,
  logo_url TEXT,
  accent_color TEXT,
  created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  env TEXT NOT NULL,
  name TEXT,
  key_hash TEXT NOT NULL UNIQUE,
  created_at BIGINT NOT NULL,
  revoked_at BIGINT
);

CREATE TABLE members (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  email TEXT NOT NULL,
  name TEXT NOT NULL,
  role TEXT NOT NULL,
  phone TEXT,
  slack_user_id TEXT,
  channels TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  removed_at BIGINT,
  UNIQUE (workspace_id, email)
);

CREATE TABLE tools (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  connection TEXT NOT NULL,
  name TEXT NOT NULL,
  classification TEXT NOT NULL,
  first_seen_at BIGINT,
  PRIMARY KEY (workspace_id, connection, name)
);

CREATE TABLE holds (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  environment TEXT NOT NULL,
  connection TEXT NOT NULL,
  tool_name TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  agent_label TEXT,
  arguments TEXT NOT NULL,
  context TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  submit_status TEXT NOT NULL,
  status TEXT NOT NULL,
  rule_name TEXT,
  approvers TEXT NOT NULL,
  approvals_required INTEGER NOT NULL,
  approvals_received INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT,
  verdict TEXT,
  reason TEXT,
  channel TEXT,
  decided_at BIGINT,
  UNIQUE (workspace_id, idempotency_key)
);
CREATE INDEX holds_pending_by_deadline ON holds (expires_at) WHERE status = 'pending';
CREATE INDEX holds_by_workspace_created ON holds (workspace_id, created_at);

-- One row per member and hold: a member's decision counts once (four-eyes).
CREATE TABLE hold_decisions (
  hold_id TEXT NOT NULL REFERENCES holds (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  verdict TEXT NOT NULL,
  comment TEXT,
  channel TEXT NOT NULL,
  decided_at BIGINT NOT NULL,
  PRIMARY KEY (hold_id, member_id)
);

CREATE TABLE evidence (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  seq BIGINT NOT NULL,
  prev_hash TEXT NOT NULL,
  type TEXT NOT NULL,
  occurred_at TEXT NOT NULL,
  data TEXT NOT NULL,
  hash TEXT NOT NULL,
  PRIMARY KEY (workspace_id, seq)
);

-- The head of each chain with its signed checkpoint; locking this row serializes appends.
CREATE TABLE evidence_heads (
  workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
  seq BIGINT NOT NULL,
  hash TEXT NOT NULL,
  signed_at TEXT,
  key_id TEXT,
  signature TEXT
);

-- Every key that ever signed a checkpoint; private_key is NULL for a key given by AUDIT_SIGNING_KEY.
CREATE TABLE signing_keys (
  id TEXT PRIMARY KEY,
  private_key TEXT,
  public_key TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
