/**
 * Repeats of a proxied call (decisions.md, amendment "MCP deduplication"): an identical call by the same
 * caller while its hold is open is that hold again; once it is over (carried out, or rejected) a repeat
 * within the rule's window gets the same answer, and a later one is a new request, decided anew. An
 * expired hold or a failed call never answers a repeat: interface.md makes the next identical call a
 * genuine new request. Pure.
 */
import type { Hold } from './hold.ts';

/** How long a repeat of a finished call gets its answer when the rule does not say. */
export const DEFAULT_REPEAT_WINDOW_MINUTES = 5;

/** When the hold's answer became final, or null while it is still open (pending, or approved and not yet run). */
function finishedAt(hold: Pick<Hold, 'status' | 'decidedAt' | 'execution' | 'createdAt'>): number | null {
  if (hold.status === 'executed') return hold.execution?.completedAt ?? hold.decidedAt ?? hold.createdAt;
  if (hold.status === 'rejected') return hold.decidedAt ?? hold.createdAt;
  return null;
}

/** Whether an identical call made at `now` is this hold again (`windowMinutes`: the rule's, else the default). */
export function answersRepeat(
  hold: Pick<Hold, 'status' | 'decidedAt' | 'execution' | 'createdAt' | 'channel'>,
  windowMinutes: number,
  now: number,
): boolean {
  if (hold.status === 'pending' || hold.status === 'approved') return true;
  // Withdrawn by its own agent (a cancelled task): nobody decided it, so a repeat asks again.
  if (hold.status === 'rejected' && hold.channel === 'agent') return false;
  const finished = finishedAt(hold);
  return finished !== null && now - finished < windowMinutes * 60_000;
}
