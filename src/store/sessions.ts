import type { Sql } from './db.ts';

export interface SessionRow {
  memberId: string;
  workspaceId: string;
  csrfToken: string;
  expiresAt: number;
}

export async function insertSession(
  sql: Sql,
  row: SessionRow & { idHash: string; createdAt: number },
): Promise<void> {
  await sql.run(
    `INSERT INTO sessions (id_hash, member_id, workspace_id, csrf_token, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [row.idHash, row.memberId, row.workspaceId, row.csrfToken, row.createdAt, row.expiresAt],
  );
}

export const findSession = (sql: Sql, idHash: string, now: number) =>
  sql.one<SessionRow>(
    `SELECT member_id AS "memberId", workspace_id AS "workspaceId", csrf_token AS "csrfToken", expires_at AS "expiresAt"
     FROM sessions WHERE id_hash = $1 AND expires_at > $2`,
    [idHash, now],
  );

export async function deleteSession(sql: Sql, idHash: string): Promise<void> {
  await sql.run('DELETE FROM sessions WHERE id_hash = $1', [idHash]);
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

export async function insertLoginToken(
  sql: Sql,
  row: { tokenHash: string; memberId: string; createdAt: number; expiresAt: number; purpose?: LinkPurpose },
): Promise<void> {
  await sql.run(
    'INSERT INTO login_tokens (token_hash, member_id, created_at, expires_at, purpose) VALUES ($1, $2, $3, $4, $5)',
    [row.tokenHash, row.memberId, row.createdAt, row.expiresAt, row.purpose ?? 'sign_in'],
  );
}

/** Marks a valid, unused token of that purpose used; returns its member, or nothing if it cannot be used. */
export async function useLoginToken(
  sql: Sql,
  tokenHash: string,
  now: number,
  purpose: LinkPurpose = 'sign_in',
): Promise<string | undefined> {
  const row = await sql.one<{ memberId: string }>(
    `UPDATE login_tokens SET used_at = $2
     WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 AND purpose = $3
     RETURNING member_id AS "memberId"`,
    [tokenHash, now, purpose],
  );
  return row?.memberId;
}

export const findLoginToken = (sql: Sql, tokenHash: string, purpose: LinkPurpose = 'sign_in') =>
  sql.one<{ memberId: string; expiresAt: number; usedAt: number | null }>(
    `SELECT member_id AS "memberId", expires_at AS "expiresAt", used_at AS "usedAt" FROM login_tokens
     WHERE token_hash = $1 AND purpose = $2`,
    [tokenHash, purpose],
  );

export interface DecisionTokenRow {
  holdId: string;
  memberId: string;
  channel: string;
  expiresAt: number;
  usedAt: number | null;
}

export async function insertDecisionToken(
  sql: Sql,
  row: Omit<DecisionTokenRow, 'usedAt'> & { tokenHash: string; createdAt: number },
): Promise<void> {
  await sql.run(
    `INSERT INTO decision_tokens (token_hash, hold_id, member_id, channel, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [row.tokenHash, row.holdId, row.memberId, row.channel, row.createdAt, row.expiresAt],
  );
}

export const findDecisionToken = (sql: Sql, tokenHash: string, lock = false) =>
  sql.one<DecisionTokenRow>(
    `SELECT hold_id AS "holdId", member_id AS "memberId", channel, expires_at AS "expiresAt", used_at AS "usedAt"
     FROM decision_tokens WHERE token_hash = $1${lock ? ' FOR UPDATE' : ''}`,
    [tokenHash],
  );

export async function markDecisionTokenUsed(sql: Sql, tokenHash: string, now: number): Promise<void> {
  await sql.run('UPDATE decision_tokens SET used_at = $2 WHERE token_hash = $1', [tokenHash, now]);
}
