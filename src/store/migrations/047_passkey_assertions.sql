-- The passkey assertions decisions were made with, by the SHA-256 of their signature: each is accepted
-- once. Its challenge names the hold, the call and the verdict, so it could otherwise be sent again for
-- the same hold, once an approver's change superseded it and another changed the call back.
CREATE TABLE passkey_assertions (
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  signature_sha256 TEXT NOT NULL,
  hold_id TEXT NOT NULL,
  used_at BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, signature_sha256)
);
