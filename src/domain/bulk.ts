/**
 * Bulk decisions (issue 39): which holds may be decided together with others, and what a set of them
 * adds up to. Rejecting in bulk is always offered; approving in bulk only where the hold's rule allows it
 * (decisions.md, amendment "Bulk decisions"), as expense tools do. Pure.
 */
import type { DecisionBlocker } from './four-eyes.ts';
import type { Verdict } from './hold.ts';
import { decidingText, ruleArguments } from './deciding-values.ts';
import type { RuleDefinition } from './rules.ts';

/** At most this many holds are decided at once: more than a page of the inbox, less than a sweep. */
export const BULK_LIMIT = 500;

/**
 * A hold is approved in bulk only when its line on the confirmation page shows the action whole, in
 * this many characters: nobody approves a value they were not shown ("No decision on a summary").
 */
export const BULK_ACTION_LENGTH = 600;

/** Why a hold is left out of a bulk decision; it stays in the inbox, to be decided on its own. */
export type BulkSkip =
  /** No such hold in the workspace. */
  | 'not_found'
  /** The decision's own refusals (`DecisionBlocker`), a viewer's included in `not_an_approver`. */
  | Exclude<DecisionBlocker, 'viewer'>
  /** Another member's claim ("I'm on it") is live: the hold is theirs to work on until it ends. */
  | 'claimed'
  /** The rule says `bulk: false`. */
  | 'not_in_bulk'
  /** Four eyes or more, and the rule does not say `bulk: true`. */
  | 'four_eyes'
  /** Each approval carries the approver's passkey signature (the rule's `signed`, or the workspace's). */
  | 'signed'
  /** The action is too long to be shown whole in a list. */
  | 'too_long'
  /** An approver changed its arguments (four eyes): the list shows them as submitted. */
  | 'changed'
  /** The workspace is frozen (the kill switch): nothing is approved until an admin unfreezes it. */
  | 'frozen';

/**
 * Why approving this hold in bulk is not allowed; null when it is. The rule's `bulk` decides, and by
 * default four-eyes holds are left out; holds with no rule (a tool's classification, a new tool) follow
 * the hold's own `approvalsRequired`. A passkey-signed approval is made one by one, whatever `bulk` says.
 */
export function bulkApprovalSkip(
  hold: { approvalsRequired: number },
  rule: Pick<RuleDefinition, 'bulk' | 'signed'> | undefined,
  workspaceRequiresPasskey: boolean,
): 'signed' | 'not_in_bulk' | 'four_eyes' | null {
  if (workspaceRequiresPasskey || rule?.signed === true) return 'signed';
  if (rule?.bulk === false) return 'not_in_bulk';
  if (rule?.bulk !== true && hold.approvalsRequired > 1) return 'four_eyes';
  return null;
}

/**
 * The arguments as the confirmation page shows them, the values the rule looks at and money first;
 * `complete` only when every one is there in full.
 */
export const bulkActionText = (
  args: Record<string, unknown> | null,
  rule: Pick<RuleDefinition, 'when'> | undefined,
) =>
  args === null
    ? { text: '', complete: false }
    : decidingText(args, rule ? ruleArguments(rule) : [], BULK_ACTION_LENGTH);

/**
 * Why this hold is left out of a bulk decision with `verdict` by member `memberId`; null when it is
 * decided. `blocker` is the member's capacity on it (null: may decide); `claim` the hold's live claim;
 * `args` null when they were too long to be read for a list.
 */
export function bulkSkip(input: {
  verdict: Verdict;
  memberId: string;
  blocker: DecisionBlocker | null;
  claim: { memberId: string } | undefined;
  hold: { approvalsRequired: number; changedArguments?: Record<string, unknown> | null };
  args: Record<string, unknown> | null;
  rule: Pick<RuleDefinition, 'bulk' | 'signed' | 'when'> | undefined;
  workspaceRequiresPasskey: boolean;
  frozen: boolean;
}): BulkSkip | null {
  const { verdict, blocker, claim, hold } = input;
  if (blocker !== null) return blocker === 'viewer' ? 'not_an_approver' : blocker;
  if (claim && claim.memberId !== input.memberId) return 'claimed';
  if (verdict === 'reject') return null;
  if (input.frozen) return 'frozen';
  if (hold.changedArguments) return 'changed';
  return (
    bulkApprovalSkip(hold, input.rule, input.workspaceRequiresPasskey) ??
    (bulkActionText(input.args, input.rule).complete ? null : 'too_long')
  );
}

export interface BulkTotals {
  count: number;
  /** Per currency, in its order of name: the sum of the numeric `amount` of holds that name a `currency`. */
  amounts: { currency: string; total: number }[];
  /** Holds without a finite numeric `amount` and a `currency` (or whose arguments were not read). */
  withoutAmount: number;
}

/** Decimal places of a number as written (`12.5` → 1); sums are rounded to the most of their terms. */
const decimalsOf = (value: number) => {
  const [mantissa = '', exponent = '0'] = String(value).split('e');
  return Math.max(0, (mantissa.split('.')[1]?.length ?? 0) - Number(exponent));
};

/** What a set of holds adds up to: how many, and their amounts per currency (`0.1 + 0.2` is `0.3`). */
export function bulkTotals(argumentsOf: readonly (Record<string, unknown> | null)[]): BulkTotals {
  const sums = new Map<string, { total: number; decimals: number }>();
  let withoutAmount = 0;
  for (const args of argumentsOf) {
    const amount = args?.amount;
    const currency = args?.currency;
    if (typeof amount !== 'number' || !Number.isFinite(amount) || typeof currency !== 'string' || !currency) {
      withoutAmount += 1;
      continue;
    }
    const sum = sums.get(currency) ?? { total: 0, decimals: 0 };
    sums.set(currency, { total: sum.total + amount, decimals: Math.max(sum.decimals, decimalsOf(amount)) });
  }
  return {
    count: argumentsOf.length,
    amounts: [...sums]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, { total, decimals }]) => ({
        currency,
        total: Number(total.toFixed(Math.min(decimals, 100))),
      })),
    withoutAmount,
  };
}
