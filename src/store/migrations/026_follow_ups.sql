-- Reaching the right person in time: reminders, escalation, delegation, quiet hours, Microsoft Teams.

-- Per member: the Teams user (Microsoft Entra object id), where and when they may be disturbed, the agent
-- identities that act for them (they never decide those agents' holds), and a delegation of their
-- approvals to another member for a period (one at a time).
ALTER TABLE members ADD COLUMN teams_user_id TEXT;
ALTER TABLE members ADD COLUMN time_zone TEXT;
-- JSON { from: "HH:MM", to: "HH:MM", weekends: boolean } in the member's time zone; null: none.
ALTER TABLE members ADD COLUMN quiet_hours TEXT;
ALTER TABLE members ADD COLUMN agents TEXT NOT NULL DEFAULT '[]';
ALTER TABLE members ADD COLUMN delegate_id TEXT;
ALTER TABLE members ADD COLUMN delegate_from BIGINT;
ALTER TABLE members ADD COLUMN delegate_until BIGINT;

-- A decision made by a delegate names the member whose place they took.
ALTER TABLE hold_decisions ADD COLUMN on_behalf_of TEXT;

-- The workspace's default reminders (JSON, as in the file), for holds whose rule asks for none.
ALTER TABLE workspaces ADD COLUMN remind TEXT;

-- A pending hold's reminders and escalation steps, fixed at submission as its approvers are; the
-- deadline worker acts on each row whose `next_at` has come.
CREATE TABLE follow_ups (
  hold_id TEXT PRIMARY KEY REFERENCES holds (id),
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  -- JSON { remind: { before: [ms], every: ms | null }, escalate: [{ after: ms, to: [approver] }] }
  plan TEXT NOT NULL,
  escalations_done INTEGER NOT NULL DEFAULT 0,
  reminded_at BIGINT,
  next_at BIGINT
);
CREATE INDEX follow_ups_due ON follow_ups (next_at) WHERE next_at IS NOT NULL;

-- What the follow-ups did, for the hold's page and the reports (the evidence has it too).
CREATE TABLE follow_up_events (
  hold_id TEXT NOT NULL REFERENCES holds (id),
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  at BIGINT NOT NULL,
  -- reminder | escalation
  kind TEXT NOT NULL,
  -- reminder: { members: [email], left_ms }; escalation: { step, added: [approver], members: [email] }
  detail TEXT NOT NULL
);
CREATE INDEX follow_up_events_by_hold ON follow_up_events (hold_id, at);
CREATE INDEX follow_up_events_by_workspace ON follow_up_events (workspace_id, at);
