-- Nothing on SQLite: PostgreSQL's lock_for_submission is made again from the store's read, which now
-- reads whether the workspace is frozen (src/store/submissions.ts, listed in src/store/migrate.ts).
SELECT 1;
