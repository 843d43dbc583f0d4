import { columns, integer, nullable, type RecordOf, text } from './columns.ts';
import type { Sql } from './db.ts';
import type { Statement } from './statements.ts';

export type NotificationChannel = 'email' | 'sms' | 'slack' | 'teams';
/** `sign_in`: a member asked for sign-in links (about no hold); `reminder`: a request again, before the deadline. */
export type NotificationKind = 'request' | 'reminder' | 'outcome' | 'refresh' | 'sign_in' | 'digest';
/**
 * `collected`: a request or reminder waiting for its member's digest window to close (not sent on its
 * own); `digested`: it went out in the digest job `digestId` (store/digests.ts).
 */
export type NotificationState = 'pending' | 'sent' | 'skipped' | 'failed' | 'collected' | 'digested';
/** Why the reader is asked besides the rule: an escalation step brought them in. */
export type NotificationReason = 'escalated';

/** Every column of `notifications` read or written here: a job that sends one message. */
export const notifications = columns({
  id: text('id'),
  workspaceId: text('workspace_id'),
  /** Null for a sign-in mail and a digest. */
  holdId: nullable(text('hold_id')),
  /** Null for a post to the configured Slack channel. */
  memberId: nullable(text('member_id')),
  channel: text<NotificationChannel>('channel'),
  kind: text<NotificationKind>('kind'),
  state: text<NotificationState>('state'),
  attempts: integer('attempts'),
  nextAttemptAt: integer('next_attempt_at'),
  /** Set while a worker attempts it. */
  claimedUntil: nullable(integer('claimed_until')),
  messageRef: nullable(text('message_ref')),
  replyCode: nullable(text('reply_code')),
  createdAt: integer('created_at'),
  sentAt: nullable(integer('sent_at')),
  digestId: nullable(text('digest_id')),
  reason: nullable(text<NotificationReason>('reason')),
});

export type Notification = RecordOf<typeof notifications.fields>;

type NewNotification = Pick<
  Notification,
  'id' | 'workspaceId' | 'holdId' | 'memberId' | 'channel' | 'kind' | 'replyCode'
> & {
  at: number;
  /** When it may be sent, if later than `at` (the member's quiet hours, or when its digest closes). */
  dueAt?: number;
  /** Collected for the member's digest rather than sent on its own. */
  collected?: boolean;
  reason?: NotificationReason | null;
};

/** A notification job to write, as a statement (`writeTogether` sends several as one). */
export function insertNotificationStatement(row: NewNotification): Statement {
  const { at, dueAt, collected, reason, ...fields } = row;
  const job = notifications.omit('attempts', 'claimedUntil', 'messageRef', 'sentAt', 'digestId').insert({
    ...fields,
    state: collected ? 'collected' : 'pending',
    nextAttemptAt: dueAt ?? at,
    createdAt: at,
    reason: reason ?? null,
  });
  return { text: `INSERT INTO notifications (${job.columns}) VALUES ${job.values}`, params: job.params };
}

export async function insertNotification(sql: Sql, row: NewNotification): Promise<void> {
  const { text, params } = insertNotificationStatement(row);
  await sql.run(text, params);
}

export async function findNotification(sql: Sql, id: string) {
  const row = await sql.one(`SELECT ${notifications.select()} FROM notifications WHERE id = $1`, [id]);
  return row && notifications.decode(row);
}

export const listNotificationsOfHold = async (sql: Sql, holdId: string) =>
  notifications.decodeAll(
    await sql.all(
      `SELECT ${notifications.select()} FROM notifications WHERE hold_id = $1 ORDER BY created_at, id`,
      [holdId],
    ),
  );

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
export async function findSmsRequestByCode(sql: Sql, memberIds: string[], code: string) {
  if (memberIds.length === 0) return undefined;
  const row = await sql.one(
    `SELECT ${notifications.select('n')} FROM notifications n JOIN holds h ON h.id = n.hold_id
     WHERE n.channel = 'sms' AND n.kind IN ('request', 'reminder') AND n.reply_code = $1 AND h.status = 'pending'
       AND n.member_id IN (${memberIds.map((_, i) => `$${i + 2}`).join(', ')})
     ORDER BY n.created_at DESC LIMIT 1`,
    [code, ...memberIds],
  );
  if (!row) return undefined;
  const request = notifications.decode(row);
  // Joined to its hold: an SMS request always has one.
  return { ...request, holdId: request.holdId! };
}

const replyCodes = notifications.pick('replyCode');

/** The reply code a member was texted for a hold, if any. */
export async function sentReplyCode(sql: Sql, workspaceId: string, holdId: string, memberId: string) {
  const row = await sql.one(
    `SELECT ${replyCodes.select()} FROM notifications
     WHERE workspace_id = $1 AND hold_id = $2 AND member_id = $3 AND channel = 'sms' AND reply_code IS NOT NULL
     LIMIT 1`,
    [workspaceId, holdId, memberId],
  );
  return (row && replyCodes.decode(row).replyCode) ?? null;
}

/** Codes of waiting holds sent to this phone number, whichever member (and workspace) it belongs to. */
export const openReplyCodes = async (sql: Sql, phone: string) =>
  replyCodes
    .decodeAll(
      await sql.all(
        `SELECT ${replyCodes.select('n')} FROM notifications n JOIN holds h ON h.id = n.hold_id
       JOIN members m ON m.id = n.member_id
       WHERE m.phone = $1 AND n.channel = 'sms' AND n.reply_code IS NOT NULL AND h.status = 'pending'`,
        [phone],
      ),
    )
    .map((row) => row.replyCode!);

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
  const asked = notifications.pick('holdId');
  const rows = await sql.all(
    `SELECT DISTINCT ${asked.select('n')} FROM notifications n
     JOIN holds h ON h.id = n.hold_id AND h.workspace_id = n.workspace_id
     WHERE n.workspace_id = $1 AND n.member_id = $2 AND n.kind = 'request' AND h.status = 'pending'`,
    [workspaceId, memberId],
  );
  return new Set(asked.decodeAll(rows).map((row) => row.holdId!));
}

/** Every column of `embed_tokens`: a member's sign-in to the embedded widget. */
const embedTokens = columns({
  tokenHash: text('token_hash'),
  workspaceId: text('workspace_id'),
  memberId: text('member_id'),
  createdAt: integer('created_at'),
  expiresAt: integer('expires_at'),
  lastUsedAt: nullable(integer('last_used_at')),
});

export async function insertEmbedToken(
  sql: Sql,
  token: Omit<RecordOf<typeof embedTokens.fields>, 'lastUsedAt'>,
): Promise<void> {
  const row = embedTokens.insert({ ...token, lastUsedAt: null });
  await sql.run(`INSERT INTO embed_tokens (${row.columns}) VALUES ${row.values}`, row.params);
}

const embedTokenUse = embedTokens.pick('workspaceId', 'memberId', 'expiresAt', 'lastUsedAt');

export async function findEmbedToken(sql: Sql, tokenHash: string) {
  const row = await sql.one(`SELECT ${embedTokenUse.select()} FROM embed_tokens WHERE token_hash = $1`, [
    tokenHash,
  ]);
  return row && embedTokenUse.decode(row);
}

export async function touchEmbedToken(sql: Sql, tokenHash: string, at: number): Promise<void> {
  await sql.run('UPDATE embed_tokens SET last_used_at = $2 WHERE token_hash = $1', [tokenHash, at]);
}

const liveEmbedTokens = embedTokens.pick('tokenHash', 'memberId', 'createdAt', 'expiresAt', 'lastUsedAt');

const memberNamed = columns({ memberName: text('name') });

export type EmbedTokenSummary = RecordOf<typeof liveEmbedTokens.fields> & { memberName: string };

/** The workspace's embed tokens that still work, newest first. */
export const listLiveEmbedTokens = async (sql: Sql, workspaceId: string, now: number) =>
  (
    await sql.all(
      `SELECT ${liveEmbedTokens.select('e')}, m.name AS "memberName"
       FROM embed_tokens e JOIN members m ON m.id = e.member_id
       WHERE e.workspace_id = $1 AND e.expires_at > $2 ORDER BY e.created_at DESC, e.token_hash`,
      [workspaceId, now],
    )
  ).map((row): EmbedTokenSummary => ({ ...liveEmbedTokens.decode(row), ...memberNamed.decode(row) }));

export const deleteEmbedToken = (sql: Sql, tokenHash: string) =>
  sql.run('DELETE FROM embed_tokens WHERE token_hash = $1', [tokenHash]);
