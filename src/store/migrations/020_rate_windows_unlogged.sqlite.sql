-- Nothing on SQLite: the embedded deployment counts rate limits in memory.
SELECT 1;
