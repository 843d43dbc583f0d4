import type { Sql } from './db.ts';
import { endAccessOfMember } from './sessions.ts';

export type Role = 'admin' | 'approver' | 'viewer';
export type NotifyChannel = 'email' | 'sms' | 'slack';

export interface Member {
  id: string;
  workspaceId: string;
  email: string;
  name: string;
  role: Role;
  phone: string | null;
  slackUserId: string | null;
  channels: NotifyChannel[];
  createdAt: number;
}

const columnsOf = (t: string) =>
  `${t}.id, ${t}.workspace_id AS "workspaceId", ${t}.email, ${t}.name, ${t}.role, ${t}.phone, ${t}.slack_user_id AS "slackUserId", ${t}.channels, ${t}.created_at AS "createdAt"`;
const columns = columnsOf('members');

type MemberRow = Omit<Member, 'channels'> & { channels: string };

const toMember = (row: MemberRow): Member => ({
  ...row,
  channels: JSON.parse(row.channels) as NotifyChannel[],
});

export async function listMembers(sql: Sql, workspaceId: string): Promise<Member[]> {
  const rows = await sql.all<MemberRow>(
    `SELECT ${columns} FROM members WHERE workspace_id = $1 AND removed_at IS NULL ORDER BY email`,
    [workspaceId],
  );
  return rows.map(toMember);
}

/** The workspace's members, each with the groups it is in: one statement. */
export async function listMembersWithGroups(
  sql: Sql,
  workspaceId: string,
): Promise<{ member: Member; groups: string[] }[]> {
  const rows = await sql.all<MemberRow & { groupName: string | null }>(
    `SELECT ${columns}, g.group_name AS "groupName" FROM members
     LEFT JOIN group_members g ON g.workspace_id = members.workspace_id AND g.member_id = members.id
     WHERE members.workspace_id = $1 AND members.removed_at IS NULL ORDER BY members.email, g.group_name`,
    [workspaceId],
  );
  const byId = new Map<string, { member: Member; groups: string[] }>();
  for (const { groupName, ...row } of rows) {
    const entry = byId.get(row.id) ?? { member: toMember(row), groups: [] };
    if (groupName !== null) entry.groups.push(groupName);
    byId.set(row.id, entry);
  }
  return [...byId.values()];
}

export async function findMember(sql: Sql, workspaceId: string, id: string): Promise<Member | undefined> {
  const row = await sql.one<MemberRow>(
    `SELECT ${columns} FROM members WHERE workspace_id = $1 AND id = $2 AND removed_at IS NULL`,
    [workspaceId, id],
  );
  return row && toMember(row);
}

export async function findMemberByEmail(
  sql: Sql,
  workspaceId: string,
  email: string,
): Promise<Member | undefined> {
  const row = await sql.one<MemberRow>(
    `SELECT ${columns} FROM members WHERE workspace_id = $1 AND email = $2 AND removed_at IS NULL`,
    [workspaceId, email.toLowerCase()],
  );
  return row && toMember(row);
}

/** Inserts or updates by e-mail; a removed member who is declared again comes back. */
export async function upsertMember(sql: Sql, member: Member): Promise<void> {
  await sql.run(
    `INSERT INTO members (id, workspace_id, email, name, role, phone, slack_user_id, channels, created_at, removed_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL)
     ON CONFLICT (workspace_id, email) DO UPDATE SET name = excluded.name, role = excluded.role,
       phone = excluded.phone, slack_user_id = excluded.slack_user_id, channels = excluded.channels, removed_at = NULL`,
    [
      member.id,
      member.workspaceId,
      member.email,
      member.name,
      member.role,
      member.phone,
      member.slackUserId,
      JSON.stringify(member.channels),
      member.createdAt,
    ],
  );
}

export async function removeMembersExcept(sql: Sql, workspaceId: string, keepEmails: string[], at: number) {
  const current = await listMembers(sql, workspaceId);
  const removed = current.filter((member) => !keepEmails.includes(member.email));
  for (const member of removed) {
    await sql.run('UPDATE members SET removed_at = $2 WHERE id = $1', [member.id, at]);
    // A member declared again later starts without the groups they had, and signs in anew.
    await sql.run('DELETE FROM group_members WHERE member_id = $1', [member.id]);
    await endAccessOfMember(sql, member.id);
  }
  return removed;
}

/** Every active membership of an e-mail address, across workspaces. */
export async function findMembershipsByEmail(
  sql: Sql,
  email: string,
): Promise<(Member & { workspaceName: string })[]> {
  const rows = await sql.all<MemberRow & { workspaceName: string }>(
    `SELECT ${columnsOf('m')},
       w.name AS "workspaceName"
     FROM members m JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.email = $1 AND m.removed_at IS NULL ORDER BY w.name`,
    [email.toLowerCase()],
  );
  return rows.map((row) => ({ ...toMember(row), workspaceName: row.workspaceName }));
}

export async function findMemberById(sql: Sql, id: string): Promise<Member | undefined> {
  const row = await sql.one<MemberRow>(
    `SELECT ${columns} FROM members WHERE id = $1 AND removed_at IS NULL`,
    [id],
  );
  return row && toMember(row);
}

export async function findMemberBySlackUser(
  sql: Sql,
  workspaceId: string,
  slackUserId: string,
): Promise<Member | undefined> {
  const row = await sql.one<MemberRow>(
    `SELECT ${columns} FROM members WHERE workspace_id = $1 AND slack_user_id = $2 AND removed_at IS NULL`,
    [workspaceId, slackUserId],
  );
  return row && toMember(row);
}

/** Every active member with this phone number, across workspaces. */
export const findMemberIdsByPhone = async (sql: Sql, phone: string) =>
  (
    await sql.all<{ id: string }>('SELECT id FROM members WHERE phone = $1 AND removed_at IS NULL', [phone])
  ).map((row) => row.id);
