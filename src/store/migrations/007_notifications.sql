-- Notifications to approvers (e-mail, SMS, Slack): jobs written with the hold change that causes
-- them, sent by a worker with retries. `kind`: request (a hold waits for this member), outcome (the
-- hold was decided or expired), refresh (Slack messages of the hold show its current state).
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  hold_id TEXT NOT NULL,
  member_id TEXT REFERENCES members (id),
  channel TEXT NOT NULL,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  claimed_until BIGINT,
  last_error TEXT,
  -- Slack: the posted message ({"channel","ts"}), so later changes update it.
  message_ref TEXT,
  -- SMS: the code a member replies with (YES 4821 / NO 4821).
  reply_code TEXT,
  created_at BIGINT NOT NULL,
  sent_at BIGINT
);
CREATE INDEX notifications_due ON notifications (state, next_attempt_at);
CREATE INDEX notifications_hold ON notifications (hold_id);

-- Embed tokens for the widget: minted in the app by a member, stored as a hash, short-lived.
CREATE TABLE embed_tokens (
  token_hash TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  member_id TEXT NOT NULL REFERENCES members (id),
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL
);

-- Signed inbound callbacks (Slack interactions, SMS replies) already acted on: a replay changes nothing.
CREATE TABLE inbound_replays (
  key TEXT PRIMARY KEY,
  seen_at BIGINT NOT NULL
);
