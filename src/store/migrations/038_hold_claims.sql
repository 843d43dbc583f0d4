-- "I'm on it" (issue 39): a member marks a pending hold as taken, so that others do not work on it too.
-- One claim per hold; it ends at `claimed_until`, when it is released, or when the hold is decided.
-- `halts_escalation` (0/1): the hold's rule said so when it was claimed; its escalation steps wait.
CREATE TABLE hold_claims (
  hold_id TEXT PRIMARY KEY REFERENCES holds (id),
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  claimed_at BIGINT NOT NULL,
  claimed_until BIGINT NOT NULL,
  halts_escalation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX hold_claims_by_workspace ON hold_claims (workspace_id, claimed_until);
