/** The `hold_claims` table: "I'm on it", a member's claim on a pending hold, until a time. */
import { boolean, columns, integer, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `hold_claims`. */
const claims = columns({
  holdId: text('hold_id'),
  workspaceId: text('workspace_id'),
  memberId: text('member_id'),
  claimedAt: integer('claimed_at'),
  until: integer('claimed_until'),
  /** The hold's rule said `claim.halts_escalation` when it was claimed. */
  haltsEscalation: boolean('halts_escalation'),
});

export type Claim = RecordOf<typeof claims.fields>;

/** A claim with its member's name, as lists show it. */
const namedClaims = columns({ ...claims.omit('workspaceId').fields, name: text('name') });
export type NamedClaim = RecordOf<typeof namedClaims.fields>;

/** Sets the hold's claim, replacing the one it had (ended, or the same member's). */
export async function saveClaim(sql: Sql, claim: Claim): Promise<void> {
  const row = claims.insert(claim);
  await sql.run(
    `INSERT INTO hold_claims (${row.columns}) VALUES ${row.values}
     ON CONFLICT (hold_id) DO UPDATE SET member_id = excluded.member_id, claimed_at = excluded.claimed_at,
       claimed_until = excluded.claimed_until, halts_escalation = excluded.halts_escalation`,
    row.params,
  );
}

/** Ended claims of the workspace go: a claim is one row per hold, kept only while it may be live. */
export async function deleteEndedClaims(sql: Sql, workspaceId: string, now: number): Promise<void> {
  await sql.run('DELETE FROM hold_claims WHERE workspace_id = $1 AND claimed_until <= $2', [
    workspaceId,
    now,
  ]);
}

export async function deleteClaim(sql: Sql, workspaceId: string, holdId: string): Promise<void> {
  await sql.run('DELETE FROM hold_claims WHERE workspace_id = $1 AND hold_id = $2', [workspaceId, holdId]);
}

/** The live claims (until after `now`) of these holds, while they are pending, with their member's name. */
export async function listLiveClaims(
  sql: Sql,
  workspaceId: string,
  holdIds: readonly string[],
  now: number,
): Promise<NamedClaim[]> {
  if (holdIds.length === 0) return [];
  const rows = await sql.all(
    `SELECT ${namedClaims.omit('name').select('c')}, m.name
     FROM hold_claims c
     JOIN holds h ON h.id = c.hold_id AND h.workspace_id = c.workspace_id AND h.status = 'pending'
     JOIN members m ON m.id = c.member_id
     WHERE c.workspace_id = $1 AND c.claimed_until > $2
       AND c.hold_id IN (${holdIds.map((_, i) => `$${i + 3}`).join(', ')})`,
    [workspaceId, now, ...holdIds],
  );
  return namedClaims.decodeAll(rows);
}
