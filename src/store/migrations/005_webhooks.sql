-- Webhooks: one endpoint per workspace, an outbox of events written with the state change that
-- causes them, and the log of every delivery attempt.
CREATE TABLE webhook_endpoints (
  workspace_id TEXT PRIMARY KEY REFERENCES workspaces (id),
  url TEXT NOT NULL,
  -- The signing secret (and the one it replaced, valid until previous_until), sealed with SECRETS_KEY.
  secret_sealed TEXT NOT NULL,
  previous_secret_sealed TEXT,
  previous_until BIGINT,
  -- Set when the receiver answered 410; events wait until the endpoint is declared again.
  disabled_at BIGINT,
  created_at BIGINT NOT NULL
);

CREATE TABLE webhook_events (
  id TEXT PRIMARY KEY,
  workspace_id TEXT NOT NULL REFERENCES workspaces (id),
  hold_id TEXT NOT NULL,
  event TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  -- pending | delivered | dead
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  next_attempt_at BIGINT NOT NULL,
  -- An instance that took the event for an attempt; past this time another may take it.
  claimed_until BIGINT,
  delivered_at BIGINT
);
CREATE INDEX webhook_events_due ON webhook_events (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_events_by_workspace ON webhook_events (workspace_id, created_at);

CREATE TABLE webhook_attempts (
  event_id TEXT NOT NULL REFERENCES webhook_events (id),
  attempt INTEGER NOT NULL,
  started_at BIGINT NOT NULL,
  duration_ms INTEGER NOT NULL,
  status_code INTEGER,
  error TEXT,
  PRIMARY KEY (event_id, attempt)
);
