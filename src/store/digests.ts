/**
 * Digests (issue 39): a member's requests and reminders collected within a window, as notification
 * rows in state `collected` due when the window closes. When it has closed, they are taken together
 * into one digest job of the notification outbox (`digested`, pointing at it), or, alone, become the
 * ordinary job they are. Written in the transaction of the hold change that causes them, like any job.
 */
import { columns, integer, text } from './columns.ts';
import type { Sql } from './db.ts';
import { insertNotification, type NotificationChannel, notifications } from './notifications.ts';

/** The workspace's digest window, and when each member's open window on each channel closes. */
export interface DigestWindows {
  minutes: number;
  /** By `${memberId} ${channel}`: the latest due time of what is collected there and not due yet. */
  closes: Map<string, number>;
}

/**
 * The workspace's digest minutes and every open window of its members, in one read (a submission
 * makes it under its chain lock, so it costs one round trip whatever the number of members).
 */
export async function digestWindows(sql: Sql, workspaceId: string, now: number): Promise<DigestWindows> {
  const rows = await sql.all<{
    minutes: unknown;
    memberId: string | null;
    channel: string | null;
    closes: unknown;
  }>(
    `SELECT w.digest_minutes AS minutes, n.member_id AS "memberId", n.channel AS channel,
            MAX(n.next_attempt_at) AS closes
     FROM workspaces w
     LEFT JOIN notifications n
       ON n.workspace_id = $1 AND n.state = 'collected' AND n.next_attempt_at > $2
     WHERE w.id = $1
     GROUP BY w.digest_minutes, n.member_id, n.channel`,
    [workspaceId, now],
  );
  const closes = new Map<string, number>();
  for (const row of rows)
    if (row.memberId !== null && row.closes !== null)
      closes.set(`${row.memberId} ${row.channel}`, Number(row.closes));
  return { minutes: rows[0] ? Number(rows[0].minutes) : DEFAULT_DIGEST_MINUTES, closes };
}

/** A member's channel whose collected items are due: one digest to make. */
const dueDigests = columns({
  workspaceId: text('workspace_id'),
  memberId: text('member_id'),
  channel: text<NotificationChannel>('channel'),
  failures: integer('failures'),
});
export type DueDigest = ReturnType<typeof dueDigests.decode> & { at: number };

/**
 * Up to `limit` members' channels whose collected items are due at `now`, longest due first: the sweep
 * reads across workspaces; each digest is then taken by statements scoped to its workspace.
 */
export async function listDueDigests(sql: Sql, now: number, limit: number): Promise<DueDigest[]> {
  const rows = await sql.all(
    `SELECT ${dueDigests.omit('failures').select()}, MAX(attempts) AS failures FROM notifications
     WHERE state = 'collected' AND next_attempt_at <= $1
     GROUP BY workspace_id, member_id, channel ORDER BY MIN(next_attempt_at) LIMIT $2`,
    [now, limit],
  );
  return dueDigests.decodeAll(rows).map((digest) => ({ ...digest, at: now }));
}

const taken = notifications.pick('id', 'holdId');

/** A collected item that went alone: its job and hold. */
export type LoneItem = ReturnType<typeof taken.decode>;

/**
 * Makes the digest job `id` of what is collected and due for the member's channel (each row taken
 * once, even by two instances at the same time). One item alone becomes the ordinary job it is, and
 * is returned (null otherwise).
 */
export async function takeDigest(sql: Sql, digest: DueDigest, id: string): Promise<LoneItem | null> {
  const items = taken.decodeAll(
    await sql.all(
      `UPDATE notifications SET state = 'digested', digest_id = $4
       WHERE workspace_id = $5 AND state = 'collected' AND member_id = $1 AND channel = $2
         AND next_attempt_at <= $3
       RETURNING ${taken.select()}`,
      [digest.memberId, digest.channel, digest.at, id, digest.workspaceId],
    ),
  );
  if (items.length === 1) {
    await sql.run(
      `UPDATE notifications SET state = 'pending', digest_id = NULL, attempts = 0, next_attempt_at = $2
       WHERE workspace_id = $3 AND id = $1`,
      [items[0]!.id, digest.at, digest.workspaceId],
    );
  } else if (items.length > 1) {
    await insertNotification(sql, {
      id,
      workspaceId: digest.workspaceId,
      holdId: null,
      memberId: digest.memberId,
      channel: digest.channel,
      kind: 'digest',
      replyCode: null,
      at: digest.at,
    });
  }
  return items.length === 1 ? items[0]! : null;
}

/** A lone item's reply code, which it was not given while collected (a digest's text has none). */
export async function setLoneItemReplyCode(
  sql: Sql,
  workspaceId: string,
  item: LoneItem,
  code: string,
): Promise<void> {
  await sql.run('UPDATE notifications SET reply_code = $3 WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    item.id,
    code,
  ]);
}

/** A failed attempt at making a digest: its items wait until `retryAt` (none: they stay due). */
export async function recordDigestFailures(
  sql: Sql,
  digest: DueDigest,
  failures: number,
  retryAt: number | null,
): Promise<void> {
  await sql.run(
    `UPDATE notifications SET attempts = $4, next_attempt_at = COALESCE($5, next_attempt_at)
     WHERE workspace_id = $6 AND state = 'collected' AND member_id = $1 AND channel = $2
       AND next_attempt_at <= $3`,
    [digest.memberId, digest.channel, digest.at, failures, retryAt, digest.workspaceId],
  );
}

/** The items a digest job carries, oldest first. */
export const listDigestItems = async (sql: Sql, workspaceId: string, digestId: string) =>
  notifications.decodeAll(
    await sql.all(
      `SELECT ${notifications.select()} FROM notifications WHERE workspace_id = $1 AND digest_id = $2
       ORDER BY created_at, id`,
      [workspaceId, digestId],
    ),
  );

/** A workspace's digest window when its file names none. */
export const DEFAULT_DIGEST_MINUTES = 5;

/** The workspace's digest window in minutes (`notifications: { digest_minutes }`). */
export async function findDigestMinutes(sql: Sql, workspaceId: string): Promise<number> {
  const row = await sql.one<{ minutes: unknown }>(
    'SELECT digest_minutes AS minutes FROM workspaces WHERE id = $1',
    [workspaceId],
  );
  return row ? Number(row.minutes) : DEFAULT_DIGEST_MINUTES;
}

export async function updateDigestMinutes(sql: Sql, workspaceId: string, minutes: number): Promise<void> {
  await sql.run('UPDATE workspaces SET digest_minutes = $2 WHERE id = $1', [workspaceId, minutes]);
}
