-- Nothing on PostgreSQL: it keeps large values apart (TOAST), so reading a hold's status, verdict and
-- channel from its row costs the same whatever its arguments (see the SQLite version).
SELECT 1;
