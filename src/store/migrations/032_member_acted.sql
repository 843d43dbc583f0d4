-- A member "has acted" once they have used any credential of theirs: opened an app session (a sign-in
-- link, a passkey), or decided a hold through the app, a decision link, Slack, Teams, SMS or the widget.
-- From then on no sign-in link for them is shown to anyone, and only they change their delivery
-- addresses (phone, Slack and Teams user ids). `signed_in_at` (migration 031) counted sessions only, so a
-- member who decided only by e-mailed links or chat never counted; the decisions made so far count now.
ALTER TABLE members RENAME COLUMN signed_in_at TO acted_at;
UPDATE members SET acted_at = (
  SELECT MIN(decided_at) FROM hold_decisions WHERE hold_decisions.member_id = members.id
) WHERE acted_at IS NULL;
