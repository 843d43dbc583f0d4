-- Approve with changes (docs/rules.md, `editable`): the arguments an approver changed, as the call is to
-- run (JSON; null: as submitted, `arguments` always keeps what was submitted).
ALTER TABLE holds ADD COLUMN changed_arguments TEXT;
-- An edit on a four-eyes rule restarts the count: the approvals of the arguments before it no longer
-- count (1), nor keep their members from approving the edited call.
ALTER TABLE hold_decisions ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
