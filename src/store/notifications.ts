import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

export type NotificationChannel = 'email' | 'sms' | 'slack' | 'teams';
/** `sign_in`: a member asked for sign-in links (about no hold); `reminder`: a request again, before the deadline. */
export type NotificationKind = 'request' | 'reminder' | 'outcome' | 'refresh' | 'sign_in';
export type NotificationState = 'pending' | 'sent' | 'skipped' | 'failed';

export interface Notification {
  id: string;
  workspaceId: string;
  /** Null for a sign-in mail. */
  holdId: string | null;
  /** Null for a post to the configured Slack channel. */
  memberId: string | null;
  channel: NotificationChannel;
  kind: NotificationKind;
  state: NotificationState;
  attempts: number;
  nextAttemptAt: number;
  /** Set while a worker attempts it. */
  claimedUntil: number | null;
  messageRef: string | null;
  replyCode: string | null;
  createdAt: number;
  sentAt: number | null;
}

const columnsOf = (t: string) =>
  `${t}.id, ${t}.workspace_id AS "workspaceId", ${t}.hold_id AS "holdId", ${t}.member_id AS "memberId",
   ${t}.channel, ${t}.kind, ${t}.state, ${t}.attempts, ${t}.next_attempt_at AS "nextAttemptAt", ${t}.claimed_until AS "claimedUntil",
   ${t}.message_ref AS "messageRef", ${t}.reply_code AS "replyCode", ${t}.created_at AS "createdAt",
   ${t}.sent_at AS "sentAt"`;
const columns = columnsOf('notifications');

type NewNotification = Pick<
  Notification,
  'id' | 'workspaceId' | 'holdId' | 'memberId' | 'channel' | 'kind' | 'replyCode'
> & {
  at: number;
  /** When it may be sent, if later than `at` (the member's quiet hours). */
  dueAt?: number;
};

/** A notification job to write, as a statement (`writeTogether` sends several as one). */
export function insertNotificationStatement(row: NewNotification): Statement {
  return {
    text: `INSERT INTO notifications (id, workspace_id, hold_id, member_id, channel, kind, state, next_attempt_at, reply_code, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7, $8, $9)`,
    params: [
      row.id,
      row.workspaceId,
      row.holdId,
      row.memberId,
      row.channel,
      row.kind,
      row.dueAt ?? row.at,
      row.replyCode,
      row.at,
    ],
  };
}

export async function insertNotification(sql: Sql, row: NewNotification): Promise<void> {
  const { text, params } = insertNotificationStatement(row);
  await sql.run(text, params);
}

export const findNotification = (sql: Sql, id: string) =>
  sql.one<Notification>(`SELECT ${columns} FROM notifications WHERE id = $1`, [id]);

export const listNotificationsOfHold = (sql: Sql, holdId: string) =>
  sql.all<Notification>(`SELECT ${columns} FROM notifications WHERE hold_id = $1 ORDER BY created_at, id`, [
    holdId,
  ]);

export async function finishNotification(
  sql: Sql,
  id: string,
  outcome: { state: 'sent' | 'skipped'; at: number; messageRef?: string | null },
): Promise<void> {
  await sql.run(
    `UPDATE notifications SET state = $2, sent_at = $3, message_ref = COALESCE($4, message_ref),
       attempts = attempts + 1, claimed_until = NULL, last_error = NULL WHERE id = $1`,
    [id, outcome.state, outcome.at, outcome.messageRef ?? null],
  );
}

/** A failed attempt: try again at `nextAttemptAt`, or give up (`failed`) when it is null. */
export async function retryNotification(
  sql: Sql,
  id: string,
  failure: { error: string; nextAttemptAt: number | null },
): Promise<void> {
  const error = failure.error.slice(0, 300);
  if (failure.nextAttemptAt === null) {
    await sql.run(
      `UPDATE notifications SET attempts = attempts + 1, claimed_until = NULL, last_error = $2, state = 'failed'
       WHERE id = $1`,
      [id, error],
    );
  } else {
    await sql.run(
      `UPDATE notifications SET attempts = attempts + 1, claimed_until = NULL, last_error = $2, next_attempt_at = $3
       WHERE id = $1`,
      [id, error, failure.nextAttemptAt],
    );
  }
}

/** Postpones a job without counting an attempt (it waits for another to finish). */
export async function postponeNotification(sql: Sql, id: string, until: number): Promise<void> {
  await sql.run('UPDATE notifications SET claimed_until = NULL, next_attempt_at = $2 WHERE id = $1', [
    id,
    until,
  ]);
}

/** The open SMS request a member's reply code names (one per member and code while its hold waits). */
export const findSmsRequestByCode = (sql: Sql, memberIds: string[], code: string) =>
  memberIds.length === 0
    ? Promise.resolve(undefined)
    : sql.one<Notification & { holdId: string }>(
        `SELECT ${columnsOf('n')} FROM notifications n JOIN holds h ON h.id = n.hold_id
         WHERE n.channel = 'sms' AND n.kind IN ('request', 'reminder') AND n.reply_code = $1 AND h.status = 'pending'
           AND n.member_id IN (${memberIds.map((_, i) => `$${i + 2}`).join(', ')})
         ORDER BY n.created_at DESC LIMIT 1`,
        [code, ...memberIds],
      );

/** The reply code a member was texted for a hold, if any. */
export const sentReplyCode = async (sql: Sql, workspaceId: string, holdId: string, memberId: string) =>
  (
    await sql.one<{ code: string }>(
      `SELECT reply_code AS code FROM notifications
       WHERE workspace_id = $1 AND hold_id = $2 AND member_id = $3 AND channel = 'sms' AND reply_code IS NOT NULL
       LIMIT 1`,
      [workspaceId, holdId, memberId],
    )
  )?.code ?? null;

/** Codes of waiting holds sent to this phone number, whichever member (and workspace) it belongs to. */
export const openReplyCodes = async (sql: Sql, phone: string) =>
  (
    await sql.all<{ code: string }>(
      `SELECT n.reply_code AS code FROM notifications n JOIN holds h ON h.id = n.hold_id
       JOIN members m ON m.id = n.member_id
       WHERE m.phone = $1 AND n.channel = 'sms' AND n.reply_code IS NOT NULL AND h.status = 'pending'`,
      [phone],
    )
  ).map((row) => row.code);

/** Remembers a signed inbound callback; false when it was seen before (a replay). */
export async function rememberInbound(sql: Sql, key: string, at: number): Promise<boolean> {
  const existing = await sql.one('SELECT key FROM inbound_replays WHERE key = $1', [key]);
  if (existing) return false;
  await sql.run('INSERT INTO inbound_replays (key, seen_at) VALUES ($1, $2)', [key, at]);
  return true;
}

/** The waiting holds of the workspace the member was already asked to decide. */
export async function pendingHoldsAskedOf(
  sql: Sql,
  workspaceId: string,
  memberId: string,
): Promise<Set<string>> {
  const rows = await sql.all<{ holdId: string }>(
    `SELECT DISTINCT n.hold_id AS "holdId" FROM notifications n
     JOIN holds h ON h.id = n.hold_id AND h.workspace_id = n.workspace_id
     WHERE n.workspace_id = $1 AND n.member_id = $2 AND n.kind = 'request' AND h.status = 'pending'`,
    [workspaceId, memberId],
  );
  return new Set(rows.map((row) => row.holdId));
}

export async function insertEmbedToken(
  sql: Sql,
  row: { tokenHash: string; workspaceId: string; memberId: string; createdAt: number; expiresAt: number },
): Promise<void> {
  await sql.run(
    'INSERT INTO embed_tokens (token_hash, workspace_id, member_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)',
    [row.tokenHash, row.workspaceId, row.memberId, row.createdAt, row.expiresAt],
  );
}

export const findEmbedToken = (sql: Sql, tokenHash: string) =>
  sql.one<{ workspaceId: string; memberId: string; expiresAt: number; lastUsedAt: number | null }>(
    `SELECT workspace_id AS "workspaceId", member_id AS "memberId", expires_at AS "expiresAt",
       last_used_at AS "lastUsedAt" FROM embed_tokens WHERE token_hash = $1`,
    [tokenHash],
  );

export async function touchEmbedToken(sql: Sql, tokenHash: string, at: number): Promise<void> {
  await sql.run('UPDATE embed_tokens SET last_used_at = $2 WHERE token_hash = $1', [tokenHash, at]);
}

export interface EmbedTokenSummary {
  tokenHash: string;
  memberId: string;
  memberName: string;
  createdAt: number;
  expiresAt: number;
  lastUsedAt: number | null;
}

/** The workspace's embed tokens that still work, newest first. */
export const listLiveEmbedTokens = (sql: Sql, workspaceId: string, now: number) =>
  sql.all<EmbedTokenSummary>(
    `SELECT e.token_hash AS "tokenHash", e.member_id AS "memberId", m.name AS "memberName",
       e.created_at AS "createdAt", e.expires_at AS "expiresAt", e.last_used_at AS "lastUsedAt"
     FROM embed_tokens e JOIN members m ON m.id = e.member_id
     WHERE e.workspace_id = $1 AND e.expires_at > $2 ORDER BY e.created_at DESC, e.token_hash`,
    [workspaceId, now],
  );

export const deleteEmbedToken = (sql: Sql, tokenHash: string) =>
  sql.run('DELETE FROM embed_tokens WHERE token_hash = $1', [tokenHash]);
