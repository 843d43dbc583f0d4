/** The version of a workspace's configuration and the last change of each item (migration 022). */
import type { Sql } from './db.ts';

export interface ItemChange {
  item: string;
  version: number;
  changedBy: string;
  changedAt: number;
}

const itemColumns = `item, version, changed_by AS "changedBy", changed_at AS "changedAt"`;

export async function configVersion(sql: Sql, workspaceId: string): Promise<number> {
  const row = await sql.one<{ version: number }>(
    'SELECT config_version AS version FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  return Number(row?.version ?? 0);
}

/** The items changed after `version`, oldest change first. */
export async function itemsChangedSince(
  sql: Sql,
  workspaceId: string,
  version: number,
): Promise<ItemChange[]> {
  const rows = await sql.all<ItemChange>(
    `SELECT ${itemColumns} FROM config_items WHERE workspace_id = $1 AND version > $2 ORDER BY version, item`,
    [workspaceId, version],
  );
  return rows.map((row) => ({ ...row, version: Number(row.version), changedAt: Number(row.changedAt) }));
}

/** Moves the workspace to `version` and marks `items` as changed in it. */
export async function recordConfigChange(
  sql: Sql,
  workspaceId: string,
  change: { version: number; items: string[]; changedBy: string; changedAt: number },
): Promise<void> {
  await sql.run('UPDATE workspaces SET config_version = $2 WHERE id = $1', [workspaceId, change.version]);
  for (const item of change.items) {
    await sql.run(
      `INSERT INTO config_items (workspace_id, item, version, changed_by, changed_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (workspace_id, item) DO UPDATE SET version = excluded.version,
         changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
      [workspaceId, item, change.version, change.changedBy, change.changedAt],
    );
  }
}
