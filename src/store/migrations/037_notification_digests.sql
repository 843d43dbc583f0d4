-- Digests (issue 39): a member's requests and reminders within a window go as one message per channel.
-- The window in minutes: the workspace's (`notifications: { digest_minutes }`, 0 sends each at once)
-- and a member's own (null: the workspace's).
ALTER TABLE workspaces ADD COLUMN digest_minutes INTEGER NOT NULL DEFAULT 5;
ALTER TABLE members ADD COLUMN digest_minutes INTEGER;
-- A request or reminder collected for a digest waits in state `collected` until its window closes
-- (next_attempt_at); it then goes out in the digest job `digest_id` (state `digested`).
ALTER TABLE notifications ADD COLUMN digest_id TEXT;
-- Why the reader is asked besides the rule: `escalated` when an escalation step brought them in.
ALTER TABLE notifications ADD COLUMN reason TEXT;
CREATE INDEX notifications_digest ON notifications (digest_id);
