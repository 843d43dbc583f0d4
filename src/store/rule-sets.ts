import type { RuleDefinition } from '../domain/rules.ts';
import type { Sql } from './db.ts';

export async function findRuleSet(
  sql: Sql,
  workspaceId: string,
): Promise<{ version: number; rules: RuleDefinition[] }> {
  const row = await sql.one<{ version: number; rules: string }>(
    'SELECT version, rules FROM rule_sets WHERE workspace_id = $1',
    [workspaceId],
  );
  return row ? { version: row.version, rules: JSON.parse(row.rules) } : { version: 0, rules: [] };
}

export async function saveRuleSet(sql: Sql, workspaceId: string, rules: RuleDefinition[]): Promise<void> {
  await sql.run(
    `INSERT INTO rule_sets (workspace_id, version, rules) VALUES ($1, 1, $2)
     ON CONFLICT (workspace_id) DO UPDATE SET version = rule_sets.version + 1, rules = excluded.rules`,
    [workspaceId, JSON.stringify(rules)],
  );
}

/** Group name → member ids. */
export async function listGroups(sql: Sql, workspaceId: string): Promise<Map<string, string[]>> {
  const rows = await sql.all<{ name: string; memberId: string }>(
    `SELECT g.group_name AS name, g.member_id AS "memberId" FROM group_members g
     JOIN members m ON m.id = g.member_id AND m.removed_at IS NULL
     WHERE g.workspace_id = $1 ORDER BY g.group_name, m.email`,
    [workspaceId],
  );
  const groups = new Map<string, string[]>();
  for (const row of rows) groups.set(row.name, [...(groups.get(row.name) ?? []), row.memberId]);
  return groups;
}

export async function groupsOfMember(sql: Sql, workspaceId: string, memberId: string): Promise<string[]> {
  const rows = await sql.all<{ name: string }>(
    'SELECT group_name AS name FROM group_members WHERE workspace_id = $1 AND member_id = $2',
    [workspaceId, memberId],
  );
  return rows.map((row) => row.name);
}

export async function replaceGroups(
  sql: Sql,
  workspaceId: string,
  groups: Map<string, string[]>,
): Promise<void> {
  await sql.run('DELETE FROM group_members WHERE workspace_id = $1', [workspaceId]);
  for (const [name, memberIds] of groups) {
    for (const memberId of memberIds) {
      await sql.run('INSERT INTO group_members (workspace_id, group_name, member_id) VALUES ($1, $2, $3)', [
        workspaceId,
        name,
        memberId,
      ]);
    }
  }
}
