-- Sign-in mails go through the notification queue (kind `sign_in`), and they are about no hold: the
-- queue's hold_id becomes optional. Neither engine can drop NOT NULL in the same words, so the table is
-- made again with the same columns and indexes.
CREATE TABLE notifications_next (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  hold_id TEXT,
  member_id TEXT REFERENCES members (id),
  channel TEXT NOT NULL,
  kind TEXT NOT NULL,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT NOT NULL,
  claimed_until BIGINT,
  last_error TEXT,
  message_ref TEXT,
  reply_code TEXT,
  created_at BIGINT NOT NULL,
  sent_at BIGINT
);
INSERT INTO notifications_next (id, workspace_id, hold_id, member_id, channel, kind, state, attempts,
  next_attempt_at, claimed_until, last_error, message_ref, reply_code, created_at, sent_at)
SELECT id, workspace_id, hold_id, member_id, channel, kind, state, attempts,
  next_attempt_at, claimed_until, last_error, message_ref, reply_code, created_at, sent_at
FROM notifications;
DROP TABLE notifications;
ALTER TABLE notifications_next RENAME TO notifications;
CREATE INDEX notifications_due ON notifications (state, next_attempt_at);
CREATE INDEX notifications_hold ON notifications (hold_id);

-- Embed tokens are listed where they can be revoked, with when each last opened the widget's API (to
-- the minute); the list reads a workspace's tokens that still work.
ALTER TABLE embed_tokens ADD COLUMN last_used_at BIGINT;
CREATE INDEX embed_tokens_by_workspace ON embed_tokens (workspace_id, expires_at);
