/**
 * Versioned migrations: `migrations/NNN_name.sql`, each applied once, in order, in its own transaction.
 * `NNN_name.sqlite.sql` and `NNN_name.postgres.sql` are one version written for each engine, where the
 * two need different things (an index one of them cannot hold). A few are made from the store's own
 * statements instead of a file, so that there is no copy of those to keep in step.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Db } from './db.ts';
import { LOCK_FOR_SUBMISSION } from './submissions.ts';

const directory = new URL('./migrations/', import.meta.url);

/** lock_for_submission made again: dropped first, as a function's result cannot change in place. */
const REMAKE_LOCK_FOR_SUBMISSION = `DROP FUNCTION IF EXISTS lock_for_submission(TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT);
${LOCK_FOR_SUBMISSION}`;

/**
 * Migrations made from the store's statements, by the name their file would have. 043 makes the
 * function again for databases past 034 when the read learnt whether the workspace is frozen.
 */
const made: Record<string, string> = {
  '034_lock_for_submission.postgres.sql': REMAKE_LOCK_FOR_SUBMISSION,
  '043_lock_for_submission.postgres.sql': REMAKE_LOCK_FOR_SUBMISSION,
};

export function listMigrations(dialect: Db['dialect']) {
  return [...readdirSync(directory), ...Object.keys(made)]
    .filter((name) => {
      const engine = name.match(/^\d{3}_[a-z0-9_]+(?:\.(sqlite|postgres))?\.sql$/);
      return engine !== null && (engine[1] === undefined || engine[1] === dialect);
    })
    .sort()
    .map((name) => ({
      version: Number(name.slice(0, 3)),
      name,
      sql: made[name] ?? readFileSync(new URL(name, directory), 'utf8'),
    }));
}

/** Returns the versions applied now. Safe to run from several instances at once. */
export async function migrate(db: Db): Promise<number[]> {
  await db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)',
  );
  const applied: number[] = [];
  for (const migration of listMigrations(db.dialect)) {
    const done = await db.transaction(async (tx) => {
      // Instances starting together wait here for each other instead of racing on the DDL.
      if (db.dialect === 'postgres') await tx.one('SELECT pg_advisory_xact_lock(7294001)');
      const existing = await tx.one('SELECT version FROM schema_migrations WHERE version = $1', [
        migration.version,
      ]);
      if (existing) return false;
      await tx.exec(migration.sql);
      await tx.run('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [
        migration.version,
        Date.now(),
      ]);
      return true;
    });
    if (done) applied.push(migration.version);
  }
  return applied;
}
