/**
 * Bulk decisions (issue 39): a member approves or rejects many holds at once. Each hold is decided
 * through the one decision path (decide-hold.ts), in a transaction of its own, so each gets its own
 * decision and evidence entry (decisions.md, amendment "Bulk decisions"); approval only where its rule
 * allows it (domain/bulk.ts), and neither verdict on a hold another member has claimed (claims.ts), both
 * checked again under the chain's lock as it is made. `bulkPreview` says
 * beforehand which holds would be decided, which left out and why, and what they add up to.
 */
import {
  BULK_ACTION_LENGTH,
  BULK_LIMIT,
  type BulkSkip,
  type BulkTotals,
  bulkActionText,
  bulkSkip,
  bulkTotals,
} from '../domain/bulk.ts';
import type { HoldStatus, Verdict } from '../domain/hold.ts';
import type { RuleDefinition } from '../domain/rules.ts';
import type { ActionSummary } from '../domain/summary.ts';
import { listLiveClaims } from '../store/claims.ts';
import type { Sql } from '../store/db.ts';
import { listDecisionsOfHolds } from '../store/hold-decisions.ts';
import { type HoldLine, listArgumentsById, listLinesById } from '../store/hold-lines.ts';
import { findHold } from '../store/holds.ts';
import type { Member } from '../store/members.ts';
import { findRequirePasskey } from '../store/passkeys.ts';
import { findWorkspace } from '../store/workspaces.ts';
import { findRuleSet } from '../store/rule-sets.ts';
import { type ClaimShown, claimsOf } from './claims.ts';
import type { ServiceContext } from './context.ts';
import { type DecisionInput, type DecisionResult, recordDecision, settleDecision } from './decide-hold.ts';
import { loadDeciders } from './deciders.ts';
import { invalid } from './errors.ts';
import { openChain } from './evidence.ts';
import { type InboxFilters, inboxPage } from './inbox.ts';

/** The holds chosen: by id (checked boxes), or every hold waiting for the member that matches a filter. */
export type BulkSelection = { holdIds: readonly string[] } | { filters: InboxFilters };

export interface BulkLine {
  line: HoldLine;
  /** Its arguments, all of them in full when `complete` (what an approval is made on). */
  action: ActionSummary;
  skip: BulkSkip | null;
  /** Its live claim, if any: another member's is why it is left out (`claimed`). */
  claim: ClaimShown | undefined;
}

export interface BulkPreview {
  verdict: Verdict;
  /** The holds that would be decided, in the selection's order (soonest deadline first for a filter). */
  decided: BulkLine[];
  skipped: BulkLine[];
  /** Ids chosen that are no hold of this workspace. */
  unknown: number;
  /** Of the holds that would be decided. */
  totals: BulkTotals;
  /** How many holds the selection named or matched; past BULK_LIMIT the rest are left out (`capped`). */
  selected: number;
  capped: boolean;
}

const ruleOf = (rules: RuleDefinition[], name: string | null) =>
  name === null ? undefined : rules.find((rule) => rule.name === name);

/** The lines chosen, at most BULK_LIMIT, and how many were chosen. */
async function selectedLines(ctx: ServiceContext, member: Member, selection: BulkSelection) {
  if ('filters' in selection) {
    const page = await inboxPage(ctx, member, {
      filters: selection.filters,
      order: 'deadline',
      limit: BULK_LIMIT,
    });
    return { lines: page.lines as HoldLine[], selected: page.matching, unknown: 0 };
  }
  const ids = [...new Set(selection.holdIds)];
  const found = new Map(
    (await listLinesById(ctx.db, member.workspaceId, ids.slice(0, BULK_LIMIT))).map((line) => [
      line.id,
      line,
    ]),
  );
  const lines = ids.slice(0, BULK_LIMIT).flatMap((id) => found.get(id) ?? []);
  return { lines, selected: ids.length, unknown: Math.min(ids.length, BULK_LIMIT) - lines.length };
}

/**
 * What deciding these holds with `verdict` would do, read as the member's inbox reads them: which
 * would be decided, which left out and why, and the total of those decided. Changes nothing.
 */
export async function bulkPreview(
  ctx: ServiceContext,
  member: Member,
  verdict: Verdict,
  selection: BulkSelection,
): Promise<BulkPreview> {
  const workspaceId = member.workspaceId;
  const { lines, selected, unknown } = await selectedLines(ctx, member, selection);
  const ids = lines.map((line) => line.id);
  // Arguments too long to be shown whole in a list are not read: such a hold is not approved here anyway.
  const readable = lines
    .filter((line) => line.argumentsSize <= BULK_ACTION_LENGTH * 2)
    .map((line) => line.id);
  const [deciders, decisions, { rules }, workspaceRequiresPasskey, args, claims, workspace] =
    await Promise.all([
      loadDeciders(ctx.db, workspaceId),
      listDecisionsOfHolds(ctx.db, ids),
      findRuleSet(ctx.db, workspaceId),
      findRequirePasskey(ctx.db, workspaceId),
      listArgumentsById(ctx.db, workspaceId, readable),
      claimsOf(ctx, workspaceId, ids),
      findWorkspace(ctx.db, workspaceId),
    ]);
  const self = deciders.byId.get(member.id);
  const now = ctx.now();
  const all = lines.map((line): BulkLine & { args: Record<string, unknown> | null } => {
    const past = decisions.filter((decision) => decision.holdId === line.id);
    const blocker = self ? deciders.capacity(line, self, past, now).blocker : 'not_an_approver';
    const read = args.get(line.id);
    const lineArgs = read?.arguments ?? null;
    const rule = ruleOf(rules, line.ruleName);
    const claim = claims.get(line.id);
    const skip = bulkSkip({
      verdict,
      memberId: member.id,
      blocker,
      claim,
      hold: { ...line, changedArguments: read?.changedArguments ?? null },
      args: lineArgs,
      rule,
      workspaceRequiresPasskey,
      frozen: workspace?.frozenAt != null,
    });
    // Arguments not read are shown by their stored summary, which says what it leaves out.
    const action = lineArgs
      ? bulkActionText(lineArgs, rule)
      : { text: line.argumentsSummary, complete: false };
    return { line, action, skip, claim, args: lineArgs };
  });
  const decided = all.filter((line) => line.skip === null);
  const strip = ({ line, action, skip, claim }: BulkLine): BulkLine => ({ line, action, skip, claim });
  return {
    verdict,
    decided: decided.map(strip),
    skipped: all.filter((line) => line.skip !== null).map(strip),
    unknown,
    totals: bulkTotals(decided.map((line) => line.args)),
    selected,
    capped: selected > BULK_LIMIT,
  };
}

export interface BulkDecisionInput {
  workspaceId: string;
  memberId: string;
  holdIds: readonly string[];
  verdict: Verdict;
  comment?: string | null;
}

/** What became of one hold: decided (its status now), or left out and why. */
export type BulkOutcome = { holdId: string } & ({ status: HoldStatus } | { skip: BulkSkip });

/**
 * Decides each hold in turn, each in its own transaction through the decision path: its own decision
 * and evidence entry (marked `bulk`), channel `inbox`. Holds that may not be approved in bulk, that
 * another member has claimed, are not the member's to decide or no longer wait are left as they are. A
 * comment too long fails at the first hold, before anything is decided.
 */
export async function bulkDecide(ctx: ServiceContext, input: BulkDecisionInput): Promise<BulkOutcome[]> {
  const ids = [...new Set(input.holdIds)];
  if (ids.length > BULK_LIMIT) throw invalid('hold', `at most ${BULK_LIMIT} holds are decided at once`);
  const outcomes: BulkOutcome[] = [];
  for (const holdId of ids) outcomes.push(await decideOne(ctx, input, holdId));
  return outcomes;
}

async function decideOne(
  ctx: ServiceContext,
  input: BulkDecisionInput,
  holdId: string,
): Promise<BulkOutcome> {
  const decision: DecisionInput = {
    workspaceId: input.workspaceId,
    holdId,
    memberId: input.memberId,
    verdict: input.verdict,
    comment: input.comment ?? null,
    channel: 'inbox',
    bulk: true,
  };
  const result = await ctx.db.transaction(async (tx): Promise<DecisionResult | BulkSkip> => {
    const chain = await openChain(tx, ctx, input.workspaceId);
    const skip = await bulkOnlySkip(tx, ctx, input, holdId);
    return skip ?? recordDecision(tx, ctx, chain, decision);
  });
  if (typeof result === 'string') return { holdId, skip: result };
  const settled = await settleDecision(ctx, decision, result);
  return settled.outcome === 'recorded'
    ? { holdId, status: settled.hold.status }
    : { holdId, skip: settled.outcome };
}

/**
 * Inside the decision's transaction: why bulk leaves this hold out (another member's claim, its rule, an
 * action too long to show), as the preview would say; null: decide it. Whether the member may decide it
 * at all, recordDecision checks next under the same lock, as for any decision.
 */
async function bulkOnlySkip(
  tx: Sql,
  ctx: ServiceContext,
  input: BulkDecisionInput,
  holdId: string,
): Promise<BulkSkip | null> {
  const hold = await findHold(tx, input.workspaceId, holdId, true);
  if (!hold) return 'not_found';
  const [claim] = await listLiveClaims(tx, input.workspaceId, [hold.id], ctx.now());
  const { rules } = await findRuleSet(tx, input.workspaceId);
  return bulkSkip({
    verdict: input.verdict,
    memberId: input.memberId,
    blocker: null,
    claim,
    hold,
    args: hold.arguments,
    rule: ruleOf(rules, hold.ruleName),
    workspaceRequiresPasskey: await findRequirePasskey(tx, input.workspaceId),
    frozen: (await findWorkspace(tx, input.workspaceId))?.frozenAt != null,
  });
}
