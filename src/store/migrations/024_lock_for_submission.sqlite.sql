-- Nothing on SQLite: one writer at a time, and no round trips; a submission locks and reads in two
-- statements (src/store/submissions.ts).
SELECT 1;
