/** Members' passkeys (WebAuthn credentials), and the one-time challenges of ceremonies under way. */
import type { Sql } from './db.ts';

export interface Passkey {
  /** The credential id, base64url. */
  id: string;
  workspaceId: string;
  memberId: string;
  /** The COSE public key, base64url, as the library verifies with it. */
  publicKey: string;
  /** COSE algorithm: -7 ES256, -257 RS256, -8 EdDSA. */
  algorithm: number;
  counter: number;
  transports: string[];
  name: string;
  createdAt: number;
  lastUsedAt: number | null;
}

type PasskeyRow = Omit<Passkey, 'transports' | 'counter' | 'createdAt' | 'lastUsedAt'> & {
  transports: string;
  counter: number | string;
  createdAt: number | string;
  lastUsedAt: number | string | null;
};

const columns = `id, workspace_id AS "workspaceId", member_id AS "memberId", public_key AS "publicKey", algorithm,
  counter, transports, name, created_at AS "createdAt", last_used_at AS "lastUsedAt"`;

const toPasskey = (row: PasskeyRow): Passkey => ({
  ...row,
  algorithm: Number(row.algorithm),
  counter: Number(row.counter),
  transports: JSON.parse(row.transports) as string[],
  createdAt: Number(row.createdAt),
  lastUsedAt: row.lastUsedAt === null ? null : Number(row.lastUsedAt),
});

export async function insertPasskey(sql: Sql, passkey: Passkey): Promise<void> {
  await sql.run(
    `INSERT INTO passkeys (id, workspace_id, member_id, public_key, algorithm, counter, transports, name, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      passkey.id,
      passkey.workspaceId,
      passkey.memberId,
      passkey.publicKey,
      passkey.algorithm,
      passkey.counter,
      JSON.stringify(passkey.transports),
      passkey.name,
      passkey.createdAt,
    ],
  );
}

export async function listPasskeys(sql: Sql, workspaceId: string, memberId: string): Promise<Passkey[]> {
  const rows = await sql.all<PasskeyRow>(
    `SELECT ${columns} FROM passkeys WHERE workspace_id = $1 AND member_id = $2 ORDER BY created_at`,
    [workspaceId, memberId],
  );
  return rows.map(toPasskey);
}

/** A member's passkey by its credential id (a decision or a sign-in in a known workspace). */
export async function findPasskey(sql: Sql, workspaceId: string, id: string): Promise<Passkey | undefined> {
  const row = await sql.one<PasskeyRow>(
    `SELECT ${columns} FROM passkeys WHERE workspace_id = $1 AND id = $2`,
    [workspaceId, id],
  );
  return row && toPasskey(row);
}

/**
 * A passkey by its credential id alone: signing in with a passkey, before anyone or any workspace is
 * known. The credential id is the authenticator's random handle, checked by the signature that follows.
 */
export async function findPasskeyForSignIn(sql: Sql, id: string): Promise<Passkey | undefined> {
  const row = await sql.one<PasskeyRow>(`SELECT ${columns} FROM passkeys WHERE id = $1`, [id]);
  return row && toPasskey(row);
}

/** The signature counter and when it was last used. */
export async function touchPasskey(
  sql: Sql,
  passkey: Pick<Passkey, 'workspaceId' | 'id'>,
  counter: number,
  at: number,
): Promise<void> {
  await sql.run('UPDATE passkeys SET counter = $3, last_used_at = $4 WHERE workspace_id = $1 AND id = $2', [
    passkey.workspaceId,
    passkey.id,
    counter,
    at,
  ]);
}

export async function deletePasskey(sql: Sql, workspaceId: string, memberId: string, id: string) {
  return (
    (await sql.run('DELETE FROM passkeys WHERE workspace_id = $1 AND member_id = $2 AND id = $3', [
      workspaceId,
      memberId,
      id,
    ])) > 0
  );
}

/** Whether the workspace requires a passkey on every approval (`approvals.require_passkey`). */
export async function findRequirePasskey(sql: Sql, workspaceId: string): Promise<boolean> {
  const row = await sql.one<{ required: number | boolean }>(
    'SELECT require_passkey AS required FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  return Number(row?.required ?? 0) === 1;
}

export async function updateRequirePasskey(sql: Sql, workspaceId: string, required: boolean): Promise<void> {
  await sql.run('UPDATE workspaces SET require_passkey = $2 WHERE id = $1', [workspaceId, required ? 1 : 0]);
}

export async function insertChallenge(
  sql: Sql,
  row: { id: string; challenge: string; purpose: string; memberId: string | null; expiresAt: number },
): Promise<void> {
  await sql.run(
    'INSERT INTO webauthn_challenges (id, challenge, purpose, member_id, expires_at) VALUES ($1, $2, $3, $4, $5)',
    [row.id, row.challenge, row.purpose, row.memberId, row.expiresAt],
  );
}

/** Takes a challenge once: it is deleted as it is read, and only one of the same purpose, in time, counts. */
export async function takeChallenge(
  sql: Sql,
  id: string,
  purpose: string,
  now: number,
): Promise<{ challenge: string; memberId: string | null } | undefined> {
  const row = await sql.one<{ challenge: string; memberId: string | null; expiresAt: number | string }>(
    `DELETE FROM webauthn_challenges WHERE id = $1 AND purpose = $2
     RETURNING challenge, member_id AS "memberId", expires_at AS "expiresAt"`,
    [id, purpose],
  );
  // Old challenges nobody finished go with the next one taken.
  await sql.run('DELETE FROM webauthn_challenges WHERE expires_at <= $1', [now]);
  return row && Number(row.expiresAt) > now
    ? { challenge: row.challenge, memberId: row.memberId }
    : undefined;
}
