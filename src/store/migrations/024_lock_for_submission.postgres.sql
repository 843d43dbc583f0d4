-- What a submission reads once it holds its workspace's chain lock (src/store/submissions.ts), in the
-- round trip that takes the lock. read_after_chain_lock ran the store's text with EXECUTE, so
-- PostgreSQL parsed and planned it again on every submission (about 0.2 ms of its CPU each); this
-- body is static, planned once per connection. It is the SQLite read of submissions.ts
-- (READ_AFTER_LOCK; test/store-scoping.test.ts compares the open-call condition). The lock comes first
-- and the read is a statement of its own: its snapshot is taken once the lock is held, so it sees
-- what the lock's previous holder committed. read_after_chain_lock stays for instances of the previous
-- version during a rolling upgrade (migrations only add); a later release drops it.
CREATE FUNCTION lock_for_submission(
  p_workspace TEXT, p_key TEXT, p_connection TEXT, p_tool TEXT, p_call_key TEXT, p_since BIGINT
) RETURNS TABLE (
  seq BIGINT, hash TEXT, "replayId" TEXT, "openId" TEXT, "ruleSetVersion" BIGINT,
  "toolName" TEXT, classification TEXT, "firstSeenAt" BIGINT, "holdsSince" BIGINT, webhook BOOLEAN
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  PERFORM 1 FROM evidence_heads WHERE workspace_id = p_workspace FOR UPDATE;
  RETURN QUERY SELECT h.seq, h.hash,
    (SELECT r.id FROM holds r WHERE r.workspace_id = p_workspace AND r.idempotency_key = p_key),
    CASE WHEN p_call_key IS NULL THEN NULL ELSE (
      SELECT o.id FROM holds o WHERE o.workspace_id = p_workspace AND o.call_key = p_call_key
        AND o.status NOT IN ('expired', 'failed', 'auto_allowed')
        AND NOT (o.status = 'rejected' AND o.channel = 'agent')
      ORDER BY o.created_at DESC LIMIT 1) END,
    COALESCE((SELECT s.version FROM rule_sets s WHERE s.workspace_id = p_workspace), 0),
    t.name, t.classification, t.first_seen_at,
    CASE WHEN p_since IS NULL THEN NULL ELSE (
      SELECT COUNT(*) FROM holds m WHERE m.workspace_id = p_workspace AND m.created_at >= p_since) END,
    EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.workspace_id = p_workspace)
  FROM evidence_heads h
  LEFT JOIN tools t ON t.workspace_id = h.workspace_id AND t.connection = p_connection AND t.name = p_tool
  WHERE h.workspace_id = p_workspace;
END
$$;
