/**
 * What a hold's follow-ups did, for its page: each escalation step (whom it added, after how long,
 * whom it asked), each reminder (whom, with how long left) and each handover to a delegate (for whom,
 * until when), oldest first, members by name.
 */
import type { Hold } from '../domain/hold.ts';
import { listFollowUpEvents } from '../store/follow-ups.ts';
import { listMembers } from '../store/members.ts';
import type { ServiceContext } from './context.ts';

export type FollowUpLogEntry =
  | {
      kind: 'escalation';
      at: number;
      step: number;
      afterMinutes: number;
      /** Approver entries the step added: `group:oncall`, `role:admin`, an e-mail. */
      added: string[];
      /** The members it asked, by name. */
      asked: string[];
    }
  | { kind: 'reminder'; at: number; reminded: string[]; secondsLeft: number }
  /** The member's delegation came into force while the hold waited: their delegate was asked. */
  | { kind: 'handover'; at: number; member: string; delegate: string; until: number };

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];

export async function followUpLog(
  ctx: ServiceContext,
  hold: Pick<Hold, 'id' | 'workspaceId'>,
): Promise<FollowUpLogEntry[]> {
  const events = await listFollowUpEvents(ctx.db, hold.workspaceId, hold.id);
  if (events.length === 0) return [];
  // A member removed since is named by the e-mail the event recorded.
  const nameOf = new Map((await listMembers(ctx.db, hold.workspaceId)).map((m) => [m.email, m.name]));
  const names = (value: unknown) => strings(value).map((email) => nameOf.get(email) ?? email);
  const name = (value: unknown) => names([value])[0] ?? '';
  return events.map(({ kind, at, detail }): FollowUpLogEntry => {
    if (kind === 'escalation')
      return {
        kind,
        at,
        step: Number(detail.step),
        afterMinutes: Number(detail.after_minutes),
        added: strings(detail.added),
        asked: names(detail.notified),
      };
    if (kind === 'handover')
      return {
        kind,
        at,
        member: name(detail.member),
        delegate: name(detail.delegate),
        until: Number(detail.until),
      };
    return { kind, at, reminded: names(detail.reminded), secondsLeft: Number(detail.seconds_left) };
  });
}
