-- Issue 37, an admin cannot act as another member.
-- When a member first signed in (null: never). A sign-in link for a member who has signed in is sent to
-- their own e-mail only; the first invitation may be shown to the admin who made it. Filled from the
-- links used and the sessions opened so far.
ALTER TABLE members ADD COLUMN signed_in_at BIGINT;
UPDATE members SET signed_in_at = (
  SELECT MIN(used_at) FROM login_tokens WHERE login_tokens.member_id = members.id AND used_at IS NOT NULL
);
UPDATE members SET signed_in_at = (SELECT MIN(created_at) FROM sessions WHERE sessions.member_id = members.id)
  WHERE signed_in_at IS NULL;

-- What a one-time link is for: signing in, or enrolling a passkey (sent to the member's own e-mail).
ALTER TABLE login_tokens ADD COLUMN purpose TEXT NOT NULL DEFAULT 'sign_in';

-- Passkeys (WebAuthn credentials) members enrolled. The public key is also in the evidence
-- (`passkey.enrolled`), so that a signed decision can be checked offline.
CREATE TABLE passkeys (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  public_key TEXT NOT NULL,
  algorithm INTEGER NOT NULL,
  counter BIGINT NOT NULL,
  transports TEXT NOT NULL,
  name TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  last_used_at BIGINT
);
CREATE INDEX passkeys_by_member ON passkeys (member_id);

-- Random challenges of the WebAuthn ceremonies under way (enrolment, sign-in): each used once.
CREATE TABLE webauthn_challenges (
  id TEXT PRIMARY KEY,
  challenge TEXT NOT NULL,
  purpose TEXT NOT NULL,
  member_id TEXT REFERENCES members (id),
  expires_at BIGINT NOT NULL
);

-- `approvals: { require_passkey: true }` in the workspace file: every approval is passkey-signed.
ALTER TABLE workspaces ADD COLUMN require_passkey INTEGER NOT NULL DEFAULT 0;
