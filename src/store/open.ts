import { join } from 'node:path';
import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import { openPostgres } from './postgres.ts';
import { openSqlite } from './sqlite.ts';

/**
 * `postgres://…` opens PostgreSQL; anything else the embedded SQLite file under `dataDir`.
 * Pending migrations run first, unless `migrations: false` (`approvals migrate` runs them itself).
 */
export async function openDb(
  options: { databaseUrl?: string; dataDir: string },
  { migrations = true } = {},
): Promise<Db> {
  const url = options.databaseUrl;
  const db =
    url && /^postgres(ql)?:\/\//.test(url)
      ? openPostgres(url)
      : openSqlite(join(options.dataDir, 'approvals.db'));
  if (!migrations) return db;
  try {
    await migrate(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return db;
}
