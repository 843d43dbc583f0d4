import type { FollowUpPlan } from '../domain/follow-ups.ts';
import { columns, integer, json, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';
import { holds } from './holds.ts';
import type { Statement } from './statements.ts';

/** Every column of `follow_ups`: a pending hold's reminders and escalation steps, and where they are. */
const followUps = columns({
  holdId: text('hold_id'),
  workspaceId: text('workspace_id'),
  plan: json<FollowUpPlan>('plan'),
  escalationsDone: integer('escalations_done'),
  remindedAt: nullable(integer('reminded_at')),
  nextAt: nullable(integer('next_at')),
  /** Failures in a row of its due work (services/due-work.ts); 0 once it succeeds. */
  failures: integer('failures'),
});

export type FollowUp = RecordOf<typeof followUps.fields>;

/** The follow-ups of a new pending hold, written with it. */
export function insertFollowUpStatement(
  row: Omit<FollowUp, 'escalationsDone' | 'remindedAt' | 'failures'>,
): Statement {
  const written = followUps.insert({ ...row, escalationsDone: 0, remindedAt: null, failures: 0 });
  return {
    text: `INSERT INTO follow_ups (${written.columns}) VALUES ${written.values}`,
    params: written.params,
  };
}

const followUpIds = followUps.pick('holdId', 'workspaceId', 'failures');

/** Follow-ups due at `now`, across workspaces (the deadline worker's sweep), the longest due first. */
export const listDueFollowUps = async (sql: Sql, now: number, limit: number) =>
  followUpIds.decodeAll(
    await sql.all(
      `SELECT ${followUpIds.select()} FROM follow_ups
       WHERE next_at IS NOT NULL AND next_at <= $1 ORDER BY next_at LIMIT $2`,
      [now, limit],
    ),
  );

export async function findFollowUp(
  sql: Sql,
  workspaceId: string,
  holdId: string,
): Promise<FollowUp | undefined> {
  const row = await sql.one(
    `SELECT ${followUps.select()} FROM follow_ups WHERE workspace_id = $1 AND hold_id = $2`,
    [workspaceId, holdId],
  );
  return row && followUps.decode(row);
}

export async function updateFollowUp(
  sql: Sql,
  row: Pick<FollowUp, 'workspaceId' | 'holdId' | 'escalationsDone' | 'remindedAt' | 'nextAt'>,
): Promise<void> {
  const { workspaceId, holdId, ...progress } = row;
  const { set, params } = followUps.update(progress, 3);
  await sql.run(`UPDATE follow_ups SET ${set} WHERE workspace_id = $1 AND hold_id = $2`, [
    workspaceId,
    holdId,
    ...params,
  ]);
}

/**
 * The failures in a row of a hold's follow-ups: after a failure, with the time they are tried again;
 * after a success (`retryAt` null), 0 and the time the follow-ups set themselves.
 */
export async function recordFollowUpFailures(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  failures: number,
  retryAt: number | null,
) {
  const { set, params } = followUps.update(
    retryAt === null ? { failures } : { failures, nextAt: retryAt },
    3,
  );
  await sql.run(`UPDATE follow_ups SET ${set} WHERE workspace_id = $1 AND hold_id = $2`, [
    workspaceId,
    holdId,
    ...params,
  ]);
}

export type FollowUpKind = 'reminder' | 'escalation' | 'handover';

/** Every column of `follow_up_events`: what the follow-ups of a hold did. */
const followUpEvents = columns({
  holdId: text('hold_id'),
  workspaceId: text('workspace_id'),
  at: integer('at'),
  kind: text<FollowUpKind>('kind'),
  detail: json<Record<string, unknown>>('detail'),
});

const eventColumns = followUpEvents.omit('workspaceId');

export type FollowUpEvent = RecordOf<typeof eventColumns.fields>;

export async function insertFollowUpEvent(
  sql: Sql,
  row: FollowUpEvent & { workspaceId: string },
): Promise<void> {
  const written = followUpEvents.insert(row);
  await sql.run(`INSERT INTO follow_up_events (${written.columns}) VALUES ${written.values}`, written.params);
}

/** What the follow-ups of a hold did, oldest first. */
export async function listFollowUpEvents(
  sql: Sql,
  workspaceId: string,
  holdId: string,
): Promise<FollowUpEvent[]> {
  const rows = await sql.all(
    `SELECT ${eventColumns.select()} FROM follow_up_events WHERE workspace_id = $1 AND hold_id = $2 ORDER BY at`,
    [workspaceId, holdId],
  );
  return eventColumns.decodeAll(rows);
}

/** The escalation steps and handovers of the workspace's holds after `since`: who they asked. */
export async function listAskingEventsSince(
  sql: Sql,
  workspaceId: string,
  since: number,
): Promise<FollowUpEvent[]> {
  const rows = await sql.all(
    `SELECT ${eventColumns.select()} FROM follow_up_events
     WHERE workspace_id = $1 AND at > $2 AND kind IN ('escalation', 'handover')`,
    [workspaceId, since],
  );
  return eventColumns.decodeAll(rows);
}

/** The waiting holds of the workspace handed over to this delegate (by e-mail) already. */
export async function pendingHoldsHandedTo(
  sql: Sql,
  workspaceId: string,
  delegate: string,
): Promise<Set<string>> {
  const handovers = followUpEvents.pick('holdId', 'detail');
  const rows = await sql.all(
    `SELECT ${handovers.select('e')} FROM follow_up_events e
     JOIN holds h ON h.id = e.hold_id AND h.workspace_id = e.workspace_id
     WHERE e.workspace_id = $1 AND e.kind = 'handover' AND h.status = 'pending'`,
    [workspaceId],
  );
  return new Set(
    handovers
      .decodeAll(rows)
      .filter((row) => row.detail.delegate === delegate)
      .map((row) => row.holdId),
  );
}

/** The new approvers of a hold an escalation step added to. */
export async function updateHoldApprovers(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  approvers: string[],
): Promise<void> {
  const { set, params } = holds.update({ approvers }, 3);
  await sql.run(`UPDATE holds SET ${set} WHERE workspace_id = $1 AND id = $2`, [
    workspaceId,
    holdId,
    ...params,
  ]);
}
