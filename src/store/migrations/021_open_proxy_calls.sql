-- The proxy's dedup lookup (an identical call's open hold) runs on every tool call. Its index held every
-- hold of a call key, so an agent polling one allowed tool made each lookup step over all its earlier
-- allowed calls. Only holds that can still be open are indexed now; the predicate is the lookup's own
-- (openProxyHoldWhere), so both engines can prove the query may use it.
DROP INDEX holds_by_call_key;
CREATE INDEX holds_open_calls ON holds (workspace_id, call_key, created_at)
  WHERE call_key IS NOT NULL AND status NOT IN ('expired', 'failed', 'auto_allowed');
