-- Issue 37: the service runs an approved MCP call only as its evidence has it. Where the hold's own
-- entries are in its workspace's chain: its `hold.submitted` and the `hold.approved` that approved it
-- (null: none yet). A database writer could change these too, but the entry found at that seq must
-- still be this hold's, of that type, with the call about to be made (services/hold-evidence.ts).
ALTER TABLE holds ADD COLUMN submitted_seq BIGINT;
ALTER TABLE holds ADD COLUMN approved_seq BIGINT;
-- Four eyes and more: the seqs of the hold's `hold.approval_recorded` entries of approvals so far (JSON
-- array), which its `hold.approved` lists as `approvals_before`.
ALTER TABLE holds ADD COLUMN approval_seqs TEXT;
-- Holds approved and not yet run (or read as approved by their agent) get theirs from the chain, once.
UPDATE holds SET submitted_seq = (
  SELECT e.seq FROM evidence e WHERE e.workspace_id = holds.workspace_id AND e.type = 'hold.submitted'
    AND e.data LIKE '%"hold":"' || holds.id || '"%' ORDER BY e.seq LIMIT 1
) WHERE status = 'approved';
UPDATE holds SET approved_seq = (
  SELECT e.seq FROM evidence e WHERE e.workspace_id = holds.workspace_id AND e.type = 'hold.approved'
    AND e.data LIKE '%"hold":"' || holds.id || '"%' ORDER BY e.seq LIMIT 1
) WHERE status = 'approved';
