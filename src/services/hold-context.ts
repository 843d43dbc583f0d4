/**
 * What a person needs beside a hold to decide it: the facts its rule saw (why it waits) and its
 * four-eyes state (who decided, who still can, and why the reader cannot).
 */
import type { DecisionBlocker } from '../domain/four-eyes.ts';
import type { Hold } from '../domain/hold.ts';
import type { HoldFacts } from '../domain/hold-facts.ts';
import { entryDataAt, entryTimeAt, entryTypesFrom, lastEntrySeq } from '../store/evidence.ts';
import { type HoldDecisionRow, listDecisionsOfHolds, listHoldDecisions } from '../store/hold-decisions.ts';
import type { Member } from '../store/members.ts';
import type { ServiceContext } from './context.ts';
import { loadDeciders } from './deciders.ts';

/** Entries read after the first one of the hold's time: its own transaction's few, with room to spare. */
const SCAN = 100;

/**
 * The facts of the hold's `hold.submitted` evidence entry; null if it cannot be found. The hold row
 * does not keep them and evidence has no index by hold, so the entry is found by time: the hold's
 * `createdAt` was taken under the chain's lock, so its entry is among the first ones appended at or
 * after that time, which a binary search over `seq` (the primary key) finds in a few lookups.
 */
export async function submissionFacts(ctx: ServiceContext, hold: Hold): Promise<HoldFacts | null> {
  const at = new Date(hold.createdAt).toISOString();
  let low = 1;
  let high = await lastEntrySeq(ctx.db, hold.workspaceId);
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    const time = await entryTimeAt(ctx.db, hold.workspaceId, middle);
    if (time === undefined || time < at) low = middle + 1;
    else high = middle;
  }
  // Entries carry the action's arguments (up to a megabyte each): only the submissions are read,
  // one at a time, and the hold's own is nearly always the first.
  for (const { seq, type } of await entryTypesFrom(ctx.db, hold.workspaceId, low, SCAN)) {
    if (type !== 'hold.submitted') continue;
    const data = JSON.parse((await entryDataAt(ctx.db, hold.workspaceId, seq)) ?? '{}') as {
      hold?: string;
      facts?: HoldFacts;
    };
    if (data.hold === hold.id) return data.facts ?? null;
  }
  return null;
}

export interface FourEyesState {
  decisions: HoldDecisionRow[];
  /** Members who may still decide (delegates among them, with whom they decide for). */
  remaining: (Member & { onBehalfOf: string | null })[];
  /** Why `reader` cannot decide; null when they can. */
  blocker: DecisionBlocker | null;
  /** Whom the reader would decide for, as a delegate; null when for themselves (or not at all). */
  readerOnBehalfOf: string | null;
}

export async function fourEyesOf(ctx: ServiceContext, hold: Hold, reader: Member): Promise<FourEyesState> {
  const [decisions, deciders] = await Promise.all([
    listHoldDecisions(ctx.db, hold.id),
    loadDeciders(ctx.db, hold.workspaceId),
  ]);
  const now = ctx.now();
  // An approval an edit superseded no longer counts: its member may approve the changed call.
  const counting = decisions.filter((decision) => !decision.superseded);
  const capacityOf = (member: Member) => deciders.capacity(hold, member, counting, now);
  const remaining = deciders.members.flatMap((member) => {
    const capacity = capacityOf(member);
    return capacity.blocker === null ? [{ ...member, onBehalfOf: capacity.onBehalfOf?.name ?? null }] : [];
  });
  // A reader no longer in the workspace is not an approver.
  const mine = deciders.byId.has(reader.id) ? capacityOf(reader) : { blocker: 'not_an_approver' as const };
  return {
    decisions,
    remaining,
    blocker: mine.blocker,
    readerOnBehalfOf: mine.blocker === null ? (mine.onBehalfOf?.name ?? null) : null,
  };
}

/**
 * The holds of these the reader would decide as a delegate, each with the member they would decide
 * for and when that member's delegation ends (the inbox's "for Ann", the form's "who is away until").
 */
export async function delegatedFor(
  ctx: ServiceContext,
  reader: Member,
  holds: readonly Pick<Hold, 'id' | 'status' | 'expiresAt' | 'approvers' | 'agentId' | 'requestedFor'>[],
): Promise<Map<string, { name: string; until: number }>> {
  const [deciders, decisions] = await Promise.all([
    loadDeciders(ctx.db, reader.workspaceId),
    listDecisionsOfHolds(
      ctx.db,
      holds.map((hold) => hold.id),
    ),
  ]);
  const self = deciders.byId.get(reader.id);
  const found = new Map<string, { name: string; until: number }>();
  if (!self) return found;
  const now = ctx.now();
  for (const hold of holds) {
    const capacity = deciders.capacity(
      hold,
      self,
      decisions.filter((d) => d.holdId === hold.id),
      now,
    );
    const principal = capacity.blocker === null ? capacity.onBehalfOf : null;
    const delegation = principal && deciders.byId.get(principal.id)?.delegation;
    if (principal && delegation) found.set(hold.id, { name: principal.name, until: delegation.until });
  }
  return found;
}
