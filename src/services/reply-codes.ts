/**
 * SMS reply codes: `YES 4821` in reply to a text decides the hold it asked about. A code is given to a
 * text sent on its own (notifications.ts), or to a collected text that goes alone when its digest
 * window closes (digests.ts); a digest's text names no one hold and carries none.
 */
import { randomInt } from 'node:crypto';
import { channelSummary } from '../channels/messages.ts';
import type { Hold } from '../domain/hold.ts';
import type { Sql } from '../store/db.ts';
import type { Member } from '../store/members.ts';
import { openReplyCodes, sentReplyCode } from '../store/notifications.ts';
import type { ServiceContext } from './context.ts';
import { passkeyRequired } from './passkeys.ts';

/**
 * Whether texts asking about the hold may carry a reply code: replies are on, the text shows every
 * argument (a code decides nothing blind), and the approval need not be passkey-signed (a code cannot
 * carry the signature).
 */
export async function smsRepliesAllowed(tx: Sql, ctx: ServiceContext, hold: Hold): Promise<boolean> {
  return (
    ctx.channels.sms?.replies === true &&
    channelSummary(hold, 'sms').complete &&
    !(await passkeyRequired(tx, hold))
  );
}

/**
 * A code no other waiting hold sent to this phone uses (the same person may be a member of several
 * workspaces), so a reply names exactly one hold; null when none is free (then the text has no code,
 * only its link). A reminder keeps the code its member got for the hold, so codes are not used up.
 * `issued`: codes of the caller's transaction not written yet (two members may share a phone).
 */
export async function replyCodeFor(
  tx: Sql,
  hold: Hold,
  member: Member,
  issued: Set<string>,
): Promise<string | null> {
  const kept = await sentReplyCode(tx, hold.workspaceId, hold.id, member.id);
  if (kept) return kept;
  const phone = member.phone!;
  const taken = new Set(await openReplyCodes(tx, phone));
  // 9000 codes: past a few hundred tries, nearly all of them are taken.
  for (let attempt = 0; attempt < 500; attempt++) {
    const code = String(randomInt(1000, 10_000));
    if (!taken.has(code) && !issued.has(`${phone} ${code}`)) {
      issued.add(`${phone} ${code}`);
      return code;
    }
  }
  return null;
}
