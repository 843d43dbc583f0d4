import type { RuleDefinition } from '../domain/rules.ts';
import { columns, integer, json, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `rule_sets`: a workspace's rules, and how many times they changed. */
const ruleSets = columns({
  workspaceId: text('workspace_id'),
  version: integer('version'),
  rules: json<RuleDefinition[]>('rules'),
});
const ruleSetColumns = ruleSets.pick('version', 'rules');

/** Every column of `group_members`, each group's name read as `name`. */
const groupMembers = columns({
  workspaceId: text('workspace_id'),
  name: text('group_name'),
  memberId: text('member_id'),
});

export async function findRuleSet(
  sql: Sql,
  workspaceId: string,
): Promise<{ version: number; rules: RuleDefinition[] }> {
  const row = await sql.one(`SELECT ${ruleSetColumns.select()} FROM rule_sets WHERE workspace_id = $1`, [
    workspaceId,
  ]);
  return row ? ruleSetColumns.decode(row) : { version: 0, rules: [] };
}

export async function saveRuleSet(sql: Sql, workspaceId: string, rules: RuleDefinition[]): Promise<void> {
  const row = ruleSets.insert({ workspaceId, version: 1, rules });
  await sql.run(
    `INSERT INTO rule_sets (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id) DO UPDATE SET version = rule_sets.version + 1, rules = excluded.rules`,
    row.params,
  );
}

/** Group name → member ids. */
export async function listGroups(sql: Sql, workspaceId: string): Promise<Map<string, string[]>> {
  const members = groupMembers.pick('name', 'memberId');
  const rows = await sql.all(
    `SELECT ${members.select('g')} FROM group_members g
     JOIN members m ON m.id = g.member_id AND m.removed_at IS NULL
     WHERE g.workspace_id = $1 ORDER BY g.group_name, m.email`,
    [workspaceId],
  );
  const groups = new Map<string, string[]>();
  for (const row of members.decodeAll(rows))
    groups.set(row.name, [...(groups.get(row.name) ?? []), row.memberId]);
  return groups;
}

export async function groupsOfMember(sql: Sql, workspaceId: string, memberId: string): Promise<string[]> {
  const names = groupMembers.pick('name');
  const rows = await sql.all(
    `SELECT ${names.select()} FROM group_members WHERE workspace_id = $1 AND member_id = $2`,
    [workspaceId, memberId],
  );
  return names.decodeAll(rows).map((row) => row.name);
}

export async function replaceGroups(
  sql: Sql,
  workspaceId: string,
  groups: Map<string, string[]>,
): Promise<void> {
  await sql.run('DELETE FROM group_members WHERE workspace_id = $1', [workspaceId]);
  for (const [name, memberIds] of groups) {
    for (const memberId of memberIds) {
      const row = groupMembers.insert({ workspaceId, name, memberId });
      await sql.run(`INSERT INTO group_members (${row.columns}) VALUES ${row.values}`, row.params);
    }
  }
}
