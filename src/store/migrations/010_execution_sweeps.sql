-- The execution worker runs a round on every hold change: both of its sweeps must read an index of
-- the few holds they look for, never scan every hold.
CREATE INDEX holds_running_executions ON holds (execution_started_at) WHERE execution_status = 'running';
DROP INDEX holds_to_execute;
CREATE INDEX holds_to_execute ON holds (created_at)
  WHERE status = 'approved' AND mcp_server_id IS NOT NULL AND execution_status IS NULL;
