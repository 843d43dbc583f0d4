/**
 * Digests (issue 39: an escalation wave sent 89 mails in a minute). A member's requests and reminders
 * within their digest window are collected (notifications.ts writes them with the hold change, in
 * state `collected`) and go as one message per channel when the window closes: the deadline worker
 * sweeps the closed windows (`dueDigestWork`) and makes each one digest job of the notification
 * outbox, which send-notifications.ts sends like any other. What cannot wait goes at once.
 */
import { randomId } from '../domain/ids.ts';
import type { Hold } from '../domain/hold.ts';
import type { Sql } from '../store/db.ts';
import {
  type DueDigest,
  listDueDigests,
  type LoneItem,
  recordDigestFailures,
  setLoneItemReplyCode,
  takeDigest,
} from '../store/digests.ts';
import { findHold } from '../store/holds.ts';
import { findMemberById, type Member } from '../store/members.ts';
import type { ServiceContext } from './context.ts';
import type { DueWork } from './due-work.ts';
import { replyCodeFor, smsRepliesAllowed } from './reply-codes.ts';

const MINUTE = 60_000;

/** A deadline this close is urgent whatever the window: a quarter of an hour to decide is little. */
export const URGENT_MS = 15 * MINUTE;

/** The member's digest window: their own, else the workspace's (`notifications: { digest_minutes }`). */
export const digestWindowMs = (member: Pick<Member, 'digestMinutes'>, workspaceMinutes: number) =>
  (member.digestMinutes ?? workspaceMinutes) * MINUTE;

/**
 * When a request or reminder for the hold goes with the member's digest: when their open window on
 * the channel closes (`openCloses`), else one window from `now`, and not before `sendable` (quiet
 * hours). Null when it goes on its own: with no window; for a four-eyes second (the hold has an
 * approval and waits for another: someone is waiting on it); or when the deadline would come within
 * twice the window, or within `URGENT_MS`, of the digest going out.
 */
export function digestDueAt(
  hold: Pick<Hold, 'approvalsReceived' | 'expiresAt'>,
  windowMs: number,
  times: { now: number; sendable: number; openCloses: number | null },
): number | null {
  if (windowMs === 0 || hold.approvalsReceived > 0) return null;
  const due = Math.max(times.sendable, times.openCloses ?? times.now + windowMs);
  const urgent = hold.expiresAt !== null && hold.expiresAt - due <= Math.max(2 * windowMs, URGENT_MS);
  return urgent ? null : due;
}

/** Members' channels whose digest window closed: each becomes one digest job (or its one item's own job). */
export const dueDigestWork: DueWork<DueDigest> = {
  listDue: (ctx, now, limit) => listDueDigests(ctx.db, now, limit),
  async run(ctx, digest) {
    await ctx.db.transaction(async (tx) => {
      const lone = await takeDigest(tx, digest, randomId('ntf_', 16));
      // Alone, a text is the ordinary one it would have been: with a reply code (collected, it had none).
      if (lone && digest.channel === 'sms') await giveReplyCode(tx, ctx, digest, lone);
    });
  },
  recordFailures: (ctx, digest, failures, retryAt) => recordDigestFailures(ctx.db, digest, failures, retryAt),
};

/** The reply code a lone text carries, as askMembers gives one to a text sent at once. */
async function giveReplyCode(tx: Sql, ctx: ServiceContext, digest: DueDigest, item: LoneItem) {
  const hold = await findHold(tx, digest.workspaceId, item.holdId!);
  const member = await findMemberById(tx, digest.memberId);
  if (hold?.status !== 'pending' || !member?.phone || !(await smsRepliesAllowed(tx, ctx, hold))) return;
  const code = await replyCodeFor(tx, hold, member, new Set());
  if (code) await setLoneItemReplyCode(tx, digest.workspaceId, item, code);
}
