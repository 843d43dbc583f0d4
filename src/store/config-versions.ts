/** The version of a workspace's configuration and the last change of each item (migration 022). */
import { columns, integer, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `config_items`: the last change of each item of a workspace's configuration. */
const configItems = columns({
  workspaceId: text('workspace_id'),
  item: text('item'),
  version: integer('version'),
  changedBy: text('changed_by'),
  changedAt: integer('changed_at'),
});

const itemColumns = configItems.omit('workspaceId');

export type ItemChange = RecordOf<typeof itemColumns.fields>;

/** The column of `workspaces` that only this module reads and writes. */
const configVersions = columns({ version: integer('config_version') });

export async function configVersion(sql: Sql, workspaceId: string): Promise<number> {
  const row = await sql.one(`SELECT ${configVersions.select()} FROM workspaces WHERE id = $1`, [workspaceId]);
  return row ? configVersions.decode(row).version : 0;
}

/** The items changed after `version`, oldest change first. */
export async function itemsChangedSince(
  sql: Sql,
  workspaceId: string,
  version: number,
): Promise<ItemChange[]> {
  const rows = await sql.all(
    `SELECT ${itemColumns.select()} FROM config_items WHERE workspace_id = $1 AND version > $2 ORDER BY version, item`,
    [workspaceId, version],
  );
  return itemColumns.decodeAll(rows);
}

/** Moves the workspace to `version` and marks `items` as changed in it. */
export async function recordConfigChange(
  sql: Sql,
  workspaceId: string,
  change: { version: number; items: string[]; changedBy: string; changedAt: number },
): Promise<void> {
  await sql.run('UPDATE workspaces SET config_version = $2 WHERE id = $1', [workspaceId, change.version]);
  const { items, ...changed } = change;
  for (const item of items) {
    const row = configItems.insert({ ...changed, workspaceId, item });
    await sql.run(
      `INSERT INTO config_items (${row.columns}) VALUES ${row.values}
       ON CONFLICT (workspace_id, item) DO UPDATE SET version = excluded.version,
         changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
      row.params,
    );
  }
}
