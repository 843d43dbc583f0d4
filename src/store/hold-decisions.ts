/** The `hold_decisions` table: each member's decision on a hold. */
import { boolean, columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';

/** Every column of `hold_decisions`: a member's decision on a hold. */
const holdDecisions = columns({
  holdId: text('hold_id'),
  memberId: text('member_id'),
  verdict: text('verdict'),
  comment: nullable(text('comment')),
  channel: text('channel'),
  decidedAt: integer('decided_at'),
  /** The member a delegate decided for. */
  onBehalfOf: nullable(text('on_behalf_of')),
});

/** A member's decision; one per member and hold (four eyes), but for approvals an edit superseded. */
export async function insertHoldDecision(
  sql: Sql,
  decision: Omit<RecordOf<typeof holdDecisions.fields>, 'decidedAt'> & { at: number },
): Promise<void> {
  const { at, ...fields } = decision;
  const written = holdDecisions.insert({ ...fields, decidedAt: at });
  // A member whose approval an edit superseded approves again: their row is the new decision (the
  // evidence keeps both).
  await sql.run(
    `INSERT INTO hold_decisions (${written.columns}) VALUES ${written.values}
     ON CONFLICT (hold_id, member_id) DO UPDATE SET verdict = EXCLUDED.verdict, comment = EXCLUDED.comment,
       channel = EXCLUDED.channel, decided_at = EXCLUDED.decided_at, on_behalf_of = EXCLUDED.on_behalf_of,
       superseded = 0
     WHERE hold_decisions.superseded = 1`,
    written.params,
  );
}

const pastDecisions = holdDecisions.pick('memberId', 'onBehalfOf');

/** Who decided the hold so far, and for whom (a delegate); not approvals an edit superseded. */
export const listPastDecisions = async (sql: Sql, holdId: string) =>
  pastDecisions.decodeAll(
    await sql.all(
      `SELECT ${pastDecisions.select()} FROM hold_decisions WHERE hold_id = $1 AND superseded = 0`,
      [holdId],
    ),
  );

/** An approval with changes: the approvals so far were of another call, and no longer count. */
export const supersedeDecisions = (sql: Sql, holdId: string) =>
  sql.run('UPDATE hold_decisions SET superseded = 1 WHERE hold_id = $1 AND superseded = 0', [holdId]);

/** Hold decisions `d`, with their member `m` and the member `p` a delegate decided for. */
const decisionColumns = `d.member_id AS "memberId", m.name, m.email, d.verdict, d.comment, d.channel,
  d.decided_at AS "decidedAt", d.on_behalf_of AS "onBehalfOf", p.name AS "onBehalfOfName", d.superseded`;

const decisionLines = columns({
  ...holdDecisions.omit('holdId').fields,
  name: text('name'),
  email: text('email'),
  /** The member a delegate decided for, by name; null when members decided themselves. */
  onBehalfOfName: nullable(text('name')),
  /** An approval of the call before an approver changed it: it no longer counts. */
  superseded: boolean('superseded'),
});

export type HoldDecisionRow = RecordOf<typeof decisionLines.fields>;

const decisionLinesOfHolds = columns({ ...decisionLines.fields, holdId: text('hold_id') });

/** The member decisions of these holds, oldest first. */
export async function listDecisionsOfHolds(
  sql: Sql,
  holdIds: readonly string[],
): Promise<(HoldDecisionRow & { holdId: string })[]> {
  if (holdIds.length === 0) return [];
  const rows = await sql.all(
    `SELECT d.hold_id AS "holdId", ${decisionColumns}
     FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
     WHERE d.hold_id IN (${holdIds.map((_, i) => `$${i + 1}`).join(', ')}) ORDER BY d.decided_at`,
    [...holdIds],
  );
  return decisionLinesOfHolds.decodeAll(rows);
}

export const listHoldDecisions = async (sql: Sql, holdId: string) =>
  decisionLines.decodeAll(
    await sql.all(
      `SELECT ${decisionColumns}
       FROM hold_decisions d JOIN members m ON m.id = d.member_id LEFT JOIN members p ON p.id = d.on_behalf_of
       WHERE d.hold_id = $1 ORDER BY d.decided_at`,
      [holdId],
    ),
  );

const pendingDecisionColumns = holdDecisions.pick('holdId', 'memberId', 'onBehalfOf');

/** The decisions so far of a workspace's pending holds, by hold: who decided, and for whom. */
export async function pendingDecisions(
  sql: Sql,
  workspaceId: string,
): Promise<Map<string, { memberId: string; onBehalfOf: string | null }[]>> {
  const rows = await sql.all(
    `SELECT ${pendingDecisionColumns.select('d')}
     FROM hold_decisions d JOIN holds h ON h.id = d.hold_id
     WHERE h.workspace_id = $1 AND h.status = 'pending' AND d.superseded = 0`,
    [workspaceId],
  );
  const byHold = new Map<string, { memberId: string; onBehalfOf: string | null }[]>();
  for (const { holdId, ...decision } of pendingDecisionColumns.decodeAll(rows))
    byHold.set(holdId, [...(byHold.get(holdId) ?? []), decision]);
  return byHold;
}
