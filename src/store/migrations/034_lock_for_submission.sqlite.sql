-- Nothing on SQLite: PostgreSQL's lock_for_submission is made again from the store's read
-- (src/store/submissions.ts, listed in src/store/migrate.ts), instead of migration 024's copy of it.
SELECT 1;
