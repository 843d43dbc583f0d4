-- The signer extends only what it verified (docs/evidence.md, "Before it signs, the service checks"):
-- a chain whose stored head failed the check before an append is frozen, and stays frozen, for every
-- instance, until an operator re-anchors it (`approvals evidence reanchor`).
ALTER TABLE evidence_heads ADD COLUMN frozen_at BIGINT;
ALTER TABLE evidence_heads ADD COLUMN frozen_seq BIGINT;
ALTER TABLE evidence_heads ADD COLUMN frozen_reason TEXT;
