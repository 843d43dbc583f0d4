-- Fixed-window rate-limit counts shared by every instance on one PostgreSQL (the embedded SQLite
-- deployment is one process and counts in memory).
CREATE TABLE rate_windows (
  key TEXT NOT NULL,
  window_start BIGINT NOT NULL,
  count INTEGER NOT NULL,
  PRIMARY KEY (key, window_start)
);
