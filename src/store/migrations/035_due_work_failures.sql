-- Due work that failed (a follow-up, a handover) waits longer after each failure in a row: the count
-- is kept with the item, so a restart or another instance goes on with the same waits.
ALTER TABLE follow_ups ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE members ADD COLUMN delegate_handover_failures INTEGER NOT NULL DEFAULT 0;
