-- When a member's delegation came into force and the holds then waiting for them were handed to their
-- delegate (who is asked for each); null until then. A new delegate or start time sets it back to null.
ALTER TABLE members ADD COLUMN delegate_handed_over_at BIGINT;
-- A handover that failed is tried again from then on, not at every sweep.
ALTER TABLE members ADD COLUMN delegate_handover_after BIGINT;
CREATE INDEX members_handover_due ON members (delegate_from)
  WHERE delegate_id IS NOT NULL AND delegate_handed_over_at IS NULL AND removed_at IS NULL;
