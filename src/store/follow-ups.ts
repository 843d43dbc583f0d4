import type { FollowUpPlan } from '../domain/follow-ups.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

export interface FollowUp {
  holdId: string;
  workspaceId: string;
  plan: FollowUpPlan;
  escalationsDone: number;
  remindedAt: number | null;
  nextAt: number | null;
}

/** The follow-ups of a new pending hold, written with it. */
export function insertFollowUpStatement(row: Omit<FollowUp, 'escalationsDone' | 'remindedAt'>): Statement {
  return {
    text: `INSERT INTO follow_ups (hold_id, workspace_id, plan, escalations_done, reminded_at, next_at)
     VALUES ($1, $2, $3, 0, NULL, $4)`,
    params: [row.holdId, row.workspaceId, JSON.stringify(row.plan), row.nextAt],
  };
}

/** Follow-ups due at `now`, across workspaces (the deadline worker's sweep), the longest due first. */
export const listDueFollowUps = (sql: Sql, now: number, limit: number) =>
  sql.all<{ holdId: string; workspaceId: string }>(
    `SELECT hold_id AS "holdId", workspace_id AS "workspaceId" FROM follow_ups
     WHERE next_at IS NOT NULL AND next_at <= $1 ORDER BY next_at LIMIT $2`,
    [now, limit],
  );

export async function findFollowUp(
  sql: Sql,
  workspaceId: string,
  holdId: string,
): Promise<FollowUp | undefined> {
  const row = await sql.one<Omit<FollowUp, 'plan'> & { plan: string }>(
    `SELECT hold_id AS "holdId", workspace_id AS "workspaceId", plan, escalations_done AS "escalationsDone",
       reminded_at AS "remindedAt", next_at AS "nextAt" FROM follow_ups WHERE workspace_id = $1 AND hold_id = $2`,
    [workspaceId, holdId],
  );
  return row && { ...row, plan: JSON.parse(row.plan) as FollowUpPlan };
}

export async function updateFollowUp(
  sql: Sql,
  row: Pick<FollowUp, 'workspaceId' | 'holdId' | 'escalationsDone' | 'remindedAt' | 'nextAt'>,
): Promise<void> {
  await sql.run(
    `UPDATE follow_ups SET escalations_done = $3, reminded_at = $4, next_at = $5
     WHERE workspace_id = $1 AND hold_id = $2`,
    [row.workspaceId, row.holdId, row.escalationsDone, row.remindedAt, row.nextAt],
  );
}

export async function postponeFollowUp(sql: Sql, workspaceId: string, holdId: string, until: number) {
  await sql.run('UPDATE follow_ups SET next_at = $3 WHERE workspace_id = $1 AND hold_id = $2', [
    workspaceId,
    holdId,
    until,
  ]);
}

export type FollowUpKind = 'reminder' | 'escalation' | 'handover';

export interface FollowUpEvent {
  holdId: string;
  at: number;
  kind: FollowUpKind;
  detail: Record<string, unknown>;
}

export async function insertFollowUpEvent(
  sql: Sql,
  row: FollowUpEvent & { workspaceId: string },
): Promise<void> {
  await sql.run(
    'INSERT INTO follow_up_events (hold_id, workspace_id, at, kind, detail) VALUES ($1, $2, $3, $4, $5)',
    [row.holdId, row.workspaceId, row.at, row.kind, JSON.stringify(row.detail)],
  );
}

/** What the follow-ups of a hold did, oldest first. */
export async function listFollowUpEvents(
  sql: Sql,
  workspaceId: string,
  holdId: string,
): Promise<FollowUpEvent[]> {
  const rows = await sql.all<Omit<FollowUpEvent, 'detail'> & { detail: string }>(
    `SELECT hold_id AS "holdId", at, kind, detail FROM follow_up_events WHERE workspace_id = $1 AND hold_id = $2 ORDER BY at`,
    [workspaceId, holdId],
  );
  return rows.map((row) => ({ ...row, detail: JSON.parse(row.detail) as Record<string, unknown> }));
}

/** The escalation steps and handovers of the workspace's holds after `since`: who they asked. */
export async function listAskingEventsSince(
  sql: Sql,
  workspaceId: string,
  since: number,
): Promise<FollowUpEvent[]> {
  const rows = await sql.all<Omit<FollowUpEvent, 'detail'> & { detail: string }>(
    `SELECT hold_id AS "holdId", at, kind, detail FROM follow_up_events
     WHERE workspace_id = $1 AND at > $2 AND kind IN ('escalation', 'handover')`,
    [workspaceId, since],
  );
  return rows.map((row) => ({ ...row, detail: JSON.parse(row.detail) as Record<string, unknown> }));
}

/** The waiting holds of the workspace handed over to this delegate (by e-mail) already. */
export async function pendingHoldsHandedTo(
  sql: Sql,
  workspaceId: string,
  delegate: string,
): Promise<Set<string>> {
  const rows = await sql.all<{ holdId: string; detail: string }>(
    `SELECT e.hold_id AS "holdId", e.detail FROM follow_up_events e
     JOIN holds h ON h.id = e.hold_id AND h.workspace_id = e.workspace_id
     WHERE e.workspace_id = $1 AND e.kind = 'handover' AND h.status = 'pending'`,
    [workspaceId],
  );
  return new Set(rows.filter((row) => JSON.parse(row.detail).delegate === delegate).map((row) => row.holdId));
}

/** The new approvers of a hold an escalation step added to. */
export async function updateHoldApprovers(
  sql: Sql,
  workspaceId: string,
  holdId: string,
  approvers: string[],
): Promise<void> {
  await sql.run('UPDATE holds SET approvers = $3 WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    holdId,
    JSON.stringify(approvers),
  ]);
}
