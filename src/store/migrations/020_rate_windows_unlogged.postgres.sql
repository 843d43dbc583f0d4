-- Rate-limit counts need no crash safety (limits fail open, and a window lasts a minute): unlogged,
-- their upsert writes no WAL and its commit waits for no disk flush. Every API request makes one,
-- so a submission no longer pays a second durable commit, and within one workspace the count's row
-- is held for microseconds instead of a flush (docs/performance.md).
ALTER TABLE rate_windows SET UNLOGGED;
