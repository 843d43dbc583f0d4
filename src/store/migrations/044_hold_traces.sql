-- Telemetry (docs/settings.md, "Telemetry"): the trace a held MCP call was submitted in, written only
-- while tracing is on, so that the upstream call run after its approval continues the agent's trace.
-- Taken (deleted) when the call runs. Not evidence: a W3C traceparent, no payload.
CREATE TABLE hold_traces (
  workspace_id TEXT NOT NULL,
  hold_id TEXT NOT NULL,
  traceparent TEXT NOT NULL,
  PRIMARY KEY (workspace_id, hold_id)
);
