-- Signed chain heads published outside the database (the checkpoints API and the evidence.checkpoint
-- webhook event), at most one a minute per workspace. A later verification compares the chain with
-- the newest of them, so a head rolled back to an older signed one shows as truncated.
CREATE TABLE evidence_checkpoints (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  seq BIGINT NOT NULL,
  hash TEXT NOT NULL,
  signed_at TEXT NOT NULL,
  key_id TEXT NOT NULL,
  signature TEXT NOT NULL,
  published_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, seq)
);
