import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `sessions`: a member signed in to the app. */
const sessions = columns({
  idHash: text('id_hash'),
  memberId: text('member_id'),
  workspaceId: text('workspace_id'),
  csrfToken: text('csrf_token'),
  createdAt: integer('created_at'),
  expiresAt: integer('expires_at'),
});

const sessionColumns = sessions.pick('memberId', 'workspaceId', 'csrfToken', 'expiresAt');

export type SessionRow = RecordOf<typeof sessionColumns.fields>;

export async function insertSession(sql: Sql, session: RecordOf<typeof sessions.fields>): Promise<void> {
  const row = sessions.insert(session);
  await sql.run(`INSERT INTO sessions (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function findSession(sql: Sql, idHash: string, now: number) {
  const row = await sql.one(
    `SELECT ${sessionColumns.select()} FROM sessions WHERE id_hash = $1 AND expires_at > $2`,
    [idHash, now],
  );
  return row && sessionColumns.decode(row);
}

export async function deleteSession(sql: Sql, idHash: string): Promise<void> {
  await sql.run('DELETE FROM sessions WHERE id_hash = $1', [idHash]);
}

/**
 * Ends the app sessions and widget embed tokens of the workspace's members but its admins (or of just
 * `memberIds`): the workspace requires its identity provider, and what a sign-in link or a passkey
 * opened would outlive that. How many sessions.
 */
export async function endSessionsOfNonAdmins(
  sql: Sql,
  workspaceId: string,
  memberIds?: readonly string[],
): Promise<number> {
  const only = memberIds ? ` AND id IN (${memberIds.map((_, i) => `$${i + 2}`).join(', ')})` : '';
  const whose = `workspace_id = $1 AND member_id IN
    (SELECT id FROM members WHERE workspace_id = $1 AND role <> 'admin'${only})`;
  const params = [workspaceId, ...(memberIds ?? [])];
  await sql.run(`DELETE FROM embed_tokens WHERE ${whose}`, params);
  return sql.run(`DELETE FROM sessions WHERE ${whose}`, params);
}

/**
 * A removed member's ways in end with the removal: sessions, sign-in links, decision links, embed
 * tokens and passkeys (whose public keys stay in the evidence). Declaring the member again later (same
 * id) revives none of them.
 */
export async function endAccessOfMember(sql: Sql, memberId: string): Promise<void> {
  for (const table of [
    'sessions',
    'login_tokens',
    'decision_tokens',
    'embed_tokens',
    'passkeys',
    'webauthn_challenges',
  ])
    await sql.run(`DELETE FROM ${table} WHERE member_id = $1`, [memberId]);
}

/** `sign_in`: a sign-in link; `enrol`: a link, sent to the member's own e-mail, to add a passkey. */
export type LinkPurpose = 'sign_in' | 'enrol';

/** Every column of `login_tokens`: a member's sign-in or enrolment link. */
const loginTokens = columns({
  tokenHash: text('token_hash'),
  memberId: text('member_id'),
  createdAt: integer('created_at'),
  expiresAt: integer('expires_at'),
  purpose: text<LinkPurpose>('purpose'),
  usedAt: nullable(integer('used_at')),
});

export async function insertLoginToken(
  sql: Sql,
  token: Omit<RecordOf<typeof loginTokens.fields>, 'purpose' | 'usedAt'> & { purpose?: LinkPurpose },
): Promise<void> {
  const row = loginTokens.insert({ ...token, purpose: token.purpose ?? 'sign_in', usedAt: null });
  await sql.run(`INSERT INTO login_tokens (${row.columns}) VALUES ${row.values}`, row.params);
}

/** Marks a valid, unused token of that purpose used; returns its member, or nothing if it cannot be used. */
export async function useLoginToken(
  sql: Sql,
  tokenHash: string,
  now: number,
  purpose: LinkPurpose = 'sign_in',
): Promise<string | undefined> {
  const owner = loginTokens.pick('memberId');
  const row = await sql.one(
    `UPDATE login_tokens SET used_at = $2
     WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 AND purpose = $3
     RETURNING ${owner.select()}`,
    [tokenHash, now, purpose],
  );
  return row && owner.decode(row).memberId;
}

export async function findLoginToken(sql: Sql, tokenHash: string, purpose: LinkPurpose = 'sign_in') {
  const token = loginTokens.pick('memberId', 'expiresAt', 'usedAt');
  const row = await sql.one(
    `SELECT ${token.select()} FROM login_tokens WHERE token_hash = $1 AND purpose = $2`,
    [tokenHash, purpose],
  );
  return row && token.decode(row);
}

/** Every column of `decision_tokens`: a member's decision link on a hold. */
const decisionTokens = columns({
  tokenHash: text('token_hash'),
  holdId: text('hold_id'),
  memberId: text('member_id'),
  channel: text('channel'),
  createdAt: integer('created_at'),
  expiresAt: integer('expires_at'),
  usedAt: nullable(integer('used_at')),
});

const decisionTokenColumns = decisionTokens.omit('tokenHash', 'createdAt');

export type DecisionTokenRow = RecordOf<typeof decisionTokenColumns.fields>;

export async function insertDecisionToken(
  sql: Sql,
  token: Omit<RecordOf<typeof decisionTokens.fields>, 'usedAt'>,
): Promise<void> {
  const row = decisionTokens.insert({ ...token, usedAt: null });
  await sql.run(`INSERT INTO decision_tokens (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function findDecisionToken(sql: Sql, tokenHash: string, lock = false) {
  const row = await sql.one(
    `SELECT ${decisionTokenColumns.select()} FROM decision_tokens WHERE token_hash = $1${lock ? ' FOR UPDATE' : ''}`,
    [tokenHash],
  );
  return row && decisionTokenColumns.decode(row);
}

export async function markDecisionTokenUsed(sql: Sql, tokenHash: string, now: number): Promise<void> {
  await sql.run('UPDATE decision_tokens SET used_at = $2 WHERE token_hash = $1', [tokenHash, now]);
}
