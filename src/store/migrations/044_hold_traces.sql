-- Telemetry (docs/settings.md, "Telemetry"): the trace a held MCP call was submitted in, written only
-- while tracing is on, so that the upstream call run after its approval continues the agent's trace.
-- Taken (deleted) when the call runs. Not evidence: a W3C traceparent, no payload.
CREATE TABLE hold_traces (
  hold_id TEXT PRIMARY KEY,
  traceparent TEXT NOT NULL
);
