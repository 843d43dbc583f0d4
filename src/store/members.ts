import type { QuietHours } from '../domain/quiet-hours.ts';
import { columns, integer, json, nullable, text } from './columns.ts';
import type { Row, Sql } from './db.ts';
import { endAccessOfMember } from './sessions.ts';

export type Role = 'admin' | 'approver' | 'viewer';
export type NotifyChannel = 'email' | 'sms' | 'slack' | 'teams';

/** Another member decides in this one's place from `from` until `until` (epoch ms). */
export interface Delegation {
  delegateId: string;
  from: number;
  until: number;
}

export interface Member {
  id: string;
  workspaceId: string;
  email: string;
  name: string;
  role: Role;
  phone: string | null;
  slackUserId: string | null;
  /** Microsoft Entra object id of the member's Teams user. */
  teamsUserId: string | null;
  channels: NotifyChannel[];
  /** IANA name; null: UTC. */
  timeZone: string | null;
  quietHours: QuietHours | null;
  /** The member's digest window in minutes (0: each message at once); null: the workspace's. */
  digestMinutes: number | null;
  /** Agent identities that act for this member (who therefore never decides their holds). */
  agents: string[];
  delegation: Delegation | null;
  createdAt: number;
}

/** Every column of `members` read or written here. */
const members = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  email: text('email'),
  name: text('name'),
  role: text<Role>('role'),
  phone: nullable(text('phone')),
  slackUserId: nullable(text('slack_user_id')),
  teamsUserId: nullable(text('teams_user_id')),
  channels: json<NotifyChannel[]>('channels'),
  timeZone: nullable(text('time_zone')),
  quietHours: nullable(json<QuietHours>('quiet_hours')),
  digestMinutes: nullable(integer('digest_minutes')),
  agents: json<string[]>('agents'),
  delegateId: nullable(text('delegate_id')),
  delegateFrom: nullable(integer('delegate_from')),
  delegateUntil: nullable(integer('delegate_until')),
  createdAt: integer('created_at'),
  /** Null while a member; a member removed and declared again keeps their row. */
  removedAt: nullable(integer('removed_at')),
  /** When the member first acted (see `markActed`). */
  actedAt: nullable(integer('acted_at')),
});

/** What a Member is read from. */
const memberColumns = members.omit('removedAt', 'actedAt');

/** The member's columns; `members` names the table where a join has a second one with the same columns. */
const columnsOf = (table = 'members') => memberColumns.select(table);

function toMember(row: Row): Member {
  const { delegateId, delegateFrom, delegateUntil, ...member } = memberColumns.decode(row);
  return {
    ...member,
    delegation: delegateId === null ? null : { delegateId, from: delegateFrom!, until: delegateUntil! },
  };
}

export async function listMembers(sql: Sql, workspaceId: string): Promise<Member[]> {
  const rows = await sql.all(
    `SELECT ${columnsOf()} FROM members WHERE workspace_id = $1 AND removed_at IS NULL ORDER BY email`,
    [workspaceId],
  );
  return rows.map(toMember);
}

const memberInGroup = columns({ groupName: nullable(text('group_name')) });

/** The workspace's members, each with the groups it is in: one statement. */
export async function listMembersWithGroups(
  sql: Sql,
  workspaceId: string,
): Promise<{ member: Member; groups: string[] }[]> {
  const rows = await sql.all(
    `SELECT ${columnsOf()}, g.group_name AS "groupName" FROM members
     LEFT JOIN group_members g ON g.workspace_id = members.workspace_id AND g.member_id = members.id
     WHERE members.workspace_id = $1 AND members.removed_at IS NULL ORDER BY members.email, g.group_name`,
    [workspaceId],
  );
  const byId = new Map<string, { member: Member; groups: string[] }>();
  for (const row of rows) {
    const { groupName } = memberInGroup.decode(row);
    const member = toMember(row);
    const entry = byId.get(member.id) ?? { member, groups: [] };
    if (groupName !== null) entry.groups.push(groupName);
    byId.set(entry.member.id, entry);
  }
  return [...byId.values()];
}

export async function findMember(sql: Sql, workspaceId: string, id: string): Promise<Member | undefined> {
  const row = await sql.one(
    `SELECT ${columnsOf()} FROM members WHERE workspace_id = $1 AND id = $2 AND removed_at IS NULL`,
    [workspaceId, id],
  );
  return row && toMember(row);
}

export async function findMemberByEmail(
  sql: Sql,
  workspaceId: string,
  email: string,
): Promise<Member | undefined> {
  const row = await sql.one(
    `SELECT ${columnsOf()} FROM members WHERE workspace_id = $1 AND email = $2 AND removed_at IS NULL`,
    [workspaceId, email.toLowerCase()],
  );
  return row && toMember(row);
}

/**
 * Inserts or updates by e-mail; a removed member who is declared again comes back. `now`: a delegation
 * that had ended by then and is made to run again hands the waiting holds over again.
 */
export async function upsertMember(sql: Sql, member: Member, now: number): Promise<void> {
  const { delegation, ...fields } = member;
  const row = members.omit('actedAt').insert({
    ...fields,
    delegateId: delegation?.delegateId ?? null,
    delegateFrom: delegation?.from ?? null,
    delegateUntil: delegation?.until ?? null,
    removedAt: null,
  });
  await sql.run(
    `INSERT INTO members (${row.columns}) VALUES ${row.values}
     ON CONFLICT (workspace_id, email) DO UPDATE SET name = excluded.name, role = excluded.role,
       phone = excluded.phone, slack_user_id = excluded.slack_user_id, channels = excluded.channels, removed_at = NULL,
       teams_user_id = excluded.teams_user_id, time_zone = excluded.time_zone, quiet_hours = excluded.quiet_hours,
       digest_minutes = excluded.digest_minutes,
       agents = excluded.agents, delegate_id = excluded.delegate_id, delegate_from = excluded.delegate_from,
       delegate_until = excluded.delegate_until,
       -- Another delegate or start hands the waiting holds over again, as does an ended delegation made
       -- to run again; a longer or shorter end of one in force does not.
       delegate_handed_over_at = CASE
         WHEN members.delegate_id IS DISTINCT FROM excluded.delegate_id
           OR members.delegate_from IS DISTINCT FROM excluded.delegate_from
           OR members.delegate_until <= $${row.params.length + 1} THEN NULL
         ELSE members.delegate_handed_over_at END`,
    [...row.params, now],
  );
}

const handoverMembers = columns({
  workspaceId: text('workspace_id'),
  memberId: text('id'),
  failures: integer('delegate_handover_failures'),
});

/**
 * Members of every workspace whose delegation is in force and whose waiting holds have not been handed
 * to their delegate yet: the deadline worker's sweep.
 */
export async function listDueHandovers(
  sql: Sql,
  now: number,
  limit: number,
): Promise<{ workspaceId: string; memberId: string; failures: number }[]> {
  // Not while the delegate is away too (delegations do not chain) or no longer a member: then the
  // member is still the one asked, and the handover waits for the delegate's return.
  const rows = await sql.all(
    `SELECT ${handoverMembers.select('m')} FROM members m
     JOIN members d ON d.workspace_id = m.workspace_id AND d.id = m.delegate_id AND d.removed_at IS NULL
     WHERE m.delegate_id IS NOT NULL AND m.delegate_handed_over_at IS NULL AND m.removed_at IS NULL
       AND m.delegate_from <= $1 AND m.delegate_until > $1
       AND (m.delegate_handover_after IS NULL OR m.delegate_handover_after <= $1)
       AND NOT (d.delegate_id IS NOT NULL AND d.delegate_from <= $1 AND d.delegate_until > $1)
     ORDER BY m.delegate_from LIMIT $2`,
    [now, limit],
  );
  return handoverMembers.decodeAll(rows);
}

/** Records the handover of the member's waiting holds; false when it was done (or changed) meanwhile. */
export async function markHandedOver(
  sql: Sql,
  workspaceId: string,
  memberId: string,
  now: number,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE members SET delegate_handed_over_at = $3
     WHERE workspace_id = $1 AND id = $2 AND delegate_handed_over_at IS NULL AND removed_at IS NULL
       AND delegate_from <= $3 AND delegate_until > $3`,
    [workspaceId, memberId, now],
  );
  return changed > 0;
}

/** The failures in a row of a member's handover, and when it is tried again (null: as soon as due). */
export async function recordHandoverFailures(
  sql: Sql,
  workspaceId: string,
  memberId: string,
  failures: number,
  retryAt: number | null,
) {
  await sql.run(
    `UPDATE members SET delegate_handover_failures = $3, delegate_handover_after = $4
     WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, memberId, failures, retryAt],
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

const inWorkspace = columns({ workspaceName: text('name') });

/** Every active membership of an e-mail address, across workspaces. */
export async function findMembershipsByEmail(
  sql: Sql,
  email: string,
): Promise<(Member & { workspaceName: string })[]> {
  const rows = await sql.all(
    `SELECT ${columnsOf('m')},
       w.name AS "workspaceName"
     FROM members m JOIN workspaces w ON w.id = m.workspace_id
     WHERE m.email = $1 AND m.removed_at IS NULL ORDER BY w.name`,
    [email.toLowerCase()],
  );
  return rows.map((row) => ({ ...toMember(row), ...inWorkspace.decode(row) }));
}

export async function findMemberById(sql: Sql, id: string): Promise<Member | undefined> {
  const row = await sql.one(`SELECT ${columnsOf()} FROM members WHERE id = $1 AND removed_at IS NULL`, [id]);
  return row && toMember(row);
}

/** The member a Slack user id or a Teams user (Entra object id, kept in lower case) is mapped to. */
export async function findMemberByChatUser(
  sql: Sql,
  workspaceId: string,
  chat: { slackUserId: string } | { teamsUserId: string },
): Promise<Member | undefined> {
  const [column, value] =
    'slackUserId' in chat
      ? ['slack_user_id', chat.slackUserId]
      : ['teams_user_id', chat.teamsUserId.toLowerCase()];
  const row = await sql.one(
    `SELECT ${columnsOf()} FROM members WHERE workspace_id = $1 AND ${column} = $2 AND removed_at IS NULL`,
    [workspaceId, value],
  );
  return row && toMember(row);
}

/** Every active member with this phone number, across workspaces. */
export const findMemberIdsByPhone = async (sql: Sql, phone: string) =>
  members
    .pick('id')
    .decodeAll(await sql.all('SELECT id FROM members WHERE phone = $1 AND removed_at IS NULL', [phone]))
    .map((row) => row.id);

/**
 * Notes that the member has acted: used a credential of theirs (an app session, a decision made through
 * any channel). The first time is kept. From then on sign-in links for them go to their own e-mail only
 * and only they change their delivery addresses (issue 37; migration 032).
 */
export async function markActed(
  sql: Sql,
  member: Pick<Member, 'workspaceId' | 'id'>,
  at: number,
): Promise<void> {
  await sql.run('UPDATE members SET acted_at = $3 WHERE workspace_id = $1 AND id = $2 AND acted_at IS NULL', [
    member.workspaceId,
    member.id,
    at,
  ]);
}

/** Whether the member has ever acted (see `markActed`). */
export async function hasActed(sql: Sql, member: Pick<Member, 'workspaceId' | 'id'>): Promise<boolean> {
  const acted = members.pick('actedAt');
  const row = await sql.one(`SELECT ${acted.select()} FROM members WHERE workspace_id = $1 AND id = $2`, [
    member.workspaceId,
    member.id,
  ]);
  return !!row && acted.decode(row).actedAt !== null;
}

/** A member's delivery addresses: where their decision links, reply codes and chat messages go. */
export interface MemberAddresses {
  phone: string | null;
  slackUserId: string | null;
  teamsUserId: string | null;
}

/**
 * Every member row of the workspace by e-mail, removed ones too (a member removed and declared again keeps
 * their row): their addresses as stored and whether they have acted.
 */
export async function listAddressOwners(
  sql: Sql,
  workspaceId: string,
): Promise<Map<string, MemberAddresses & { id: string; acted: boolean; removed: boolean }>> {
  const owners = members.pick('id', 'email', 'phone', 'slackUserId', 'teamsUserId', 'actedAt', 'removedAt');
  const rows = await sql.all(`SELECT ${owners.select()} FROM members WHERE workspace_id = $1`, [workspaceId]);
  return new Map(
    owners
      .decodeAll(rows)
      .map(({ email, actedAt, removedAt, ...row }) => [
        email,
        { ...row, acted: actedAt !== null, removed: removedAt !== null },
      ]),
  );
}
