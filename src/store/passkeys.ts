/** Members' passkeys (WebAuthn credentials), and the one-time challenges of ceremonies under way. */
import { boolean, columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Row, Sql } from './db.ts';

/** Every column of `passkeys`. */
const passkeys = columns({
  /** The credential id, base64url. */
  id: text('id'),
  workspaceId: text('workspace_id'),
  memberId: text('member_id'),
  /** The COSE public key, base64url, as the library verifies with it. */
  publicKey: text('public_key'),
  /** COSE algorithm: -7 ES256, -257 RS256, -8 EdDSA. */
  algorithm: integer('algorithm'),
  counter: integer('counter'),
  transports: json<string[]>('transports'),
  name: text('name'),
  createdAt: integer('created_at'),
  lastUsedAt: nullable(integer('last_used_at')),
});

export type Passkey = RecordOf<typeof passkeys.fields>;

const toPasskey = (row: Row): Passkey => passkeys.decode(row);

export async function insertPasskey(sql: Sql, passkey: Passkey): Promise<void> {
  const row = passkeys.insert(passkey);
  await sql.run(`INSERT INTO passkeys (${row.columns}) VALUES ${row.values}`, row.params);
}

export async function listPasskeys(sql: Sql, workspaceId: string, memberId: string): Promise<Passkey[]> {
  const rows = await sql.all(
    `SELECT ${passkeys.select()} FROM passkeys WHERE workspace_id = $1 AND member_id = $2 ORDER BY created_at`,
    [workspaceId, memberId],
  );
  return rows.map(toPasskey);
}

/** A member's passkey by its credential id (a decision or a sign-in in a known workspace). */
export async function findPasskey(sql: Sql, workspaceId: string, id: string): Promise<Passkey | undefined> {
  const row = await sql.one(`SELECT ${passkeys.select()} FROM passkeys WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    id,
  ]);
  return row && toPasskey(row);
}

/**
 * A passkey by its credential id alone: signing in with a passkey, before anyone or any workspace is
 * known. The credential id is the authenticator's random handle, checked by the signature that follows.
 */
export async function findPasskeyForSignIn(sql: Sql, id: string): Promise<Passkey | undefined> {
  const row = await sql.one(`SELECT ${passkeys.select()} FROM passkeys WHERE id = $1`, [id]);
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

/** The column of `workspaces` that only passkeys read. */
const passkeyRequired = columns({ requirePasskey: boolean('require_passkey') });

/** Whether the workspace requires a passkey on every approval (`approvals.require_passkey`). */
export async function findRequirePasskey(sql: Sql, workspaceId: string): Promise<boolean> {
  const row = await sql.one(`SELECT ${passkeyRequired.select()} FROM workspaces WHERE id = $1`, [
    workspaceId,
  ]);
  return !!row && passkeyRequired.decode(row).requirePasskey;
}

export async function updateRequirePasskey(sql: Sql, workspaceId: string, required: boolean): Promise<void> {
  const { set, params } = passkeyRequired.update({ requirePasskey: required }, 2);
  await sql.run(`UPDATE workspaces SET ${set} WHERE id = $1`, [workspaceId, ...params]);
}

/** Every column of `webauthn_challenges`: one-time challenges of ceremonies under way. */
const challenges = columns({
  id: text('id'),
  challenge: text('challenge'),
  purpose: text('purpose'),
  memberId: nullable(text('member_id')),
  expiresAt: integer('expires_at'),
});

export async function insertChallenge(
  sql: Sql,
  challenge: RecordOf<typeof challenges.fields>,
): Promise<void> {
  const row = challenges.insert(challenge);
  await sql.run(`INSERT INTO webauthn_challenges (${row.columns}) VALUES ${row.values}`, row.params);
}

const taken = challenges.pick('challenge', 'memberId', 'expiresAt');

/** Takes a challenge once: it is deleted as it is read, and only one of the same purpose, in time, counts. */
export async function takeChallenge(
  sql: Sql,
  id: string,
  purpose: string,
  now: number,
): Promise<{ challenge: string; memberId: string | null } | undefined> {
  const row = await sql.one(
    `DELETE FROM webauthn_challenges WHERE id = $1 AND purpose = $2 RETURNING ${taken.select()}`,
    [id, purpose],
  );
  // Old challenges nobody finished go with the next one taken.
  await sql.run('DELETE FROM webauthn_challenges WHERE expires_at <= $1', [now]);
  if (!row) return undefined;
  const { expiresAt, ...challenge } = taken.decode(row);
  return expiresAt > now ? challenge : undefined;
}

/**
 * Keeps a decision's assertion (by the SHA-256 of its signature); false when it was kept before: an
 * assertion decides once.
 */
export async function rememberAssertion(
  sql: Sql,
  use: { workspaceId: string; signatureSha256: string; holdId: string; at: number },
): Promise<boolean> {
  const added = await sql.run(
    `INSERT INTO passkey_assertions (workspace_id, signature_sha256, hold_id, used_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (workspace_id, signature_sha256) DO NOTHING`,
    [use.workspaceId, use.signatureSha256, use.holdId, use.at],
  );
  return added > 0;
}
