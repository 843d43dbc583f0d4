-- A read made once the workspace's chain head is locked, with a snapshot taken after the lock: a
-- statement that waits for a row lock reads with the snapshot it started with, and would miss what
-- the holder it waited for committed. So a submission takes its lock and reads what its checks need
-- in one round trip (src/store/submissions.ts). `p_query` is the store's own SQL, its parameters
-- `($1)[n]` of `p_params`; each row comes back as JSON.
CREATE FUNCTION read_after_chain_lock(p_workspace TEXT, p_query TEXT, p_params TEXT[]) RETURNS SETOF JSON
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM evidence_heads WHERE workspace_id = p_workspace FOR UPDATE;
  RETURN QUERY EXECUTE 'SELECT row_to_json(q) FROM (' || p_query || ') q' USING p_params;
END
$$;
