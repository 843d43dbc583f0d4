/**
 * The argument values a person decides on, first: the ones the hold's rule looks at (an amount,
 * its currency, a payee), then money and recipient keys, then the rest. A memo of any length can
 * then never push the amount out of a line (issue 39). Pure.
 */
import type { RuleDefinition } from './rules.ts';
import { cut, jsonLine, showHidden, summarizeEntries, type ActionSummary } from './summary.ts';

/**
 * Keys that name money or where it goes, shown right after the rule's own (compared in lower case).
 * Short on purpose: a key here is one a payment approver reads before anything else.
 */
export const MONEY_KEYS = ['amount', 'currency', 'payee', 'to', 'recipient', 'account', 'iban'];

/** Keys whose string value names who receives the action, in the order `payeeText` prefers them. */
const PAYEE_KEYS = ['payee', 'to', 'recipient'];

/** A payee longer than this is cut (`…`). */
const PAYEE_LENGTH = 60;

/**
 * The top-level argument names the rule's conditions refer to, in the rule's order, each once
 * (`payee.name` → `payee`); an amount brings its currency along, which says what the amount means.
 */
export function ruleArguments(rule: Pick<RuleDefinition, 'when'>): string[] {
  const names = new Set<string>();
  for (const condition of rule.when ?? []) {
    const name = condition.arg.split('.')[0]!;
    names.add(name);
    if (name === 'amount') names.add('currency');
  }
  return [...names];
}

const moneyRank = (key: string) => MONEY_KEYS.indexOf(key.toLowerCase());

/**
 * The arguments as [name, value] pairs: the `referenced` names first (in their order, those the
 * arguments have), then money and recipient keys (in `MONEY_KEYS` order), then the rest as given.
 */
export function decidingEntries(
  args: Record<string, unknown>,
  referenced: readonly string[],
): [string, unknown][] {
  const first = referenced.filter((name) => Object.hasOwn(args, name));
  const chosen = new Set(first);
  const money = Object.keys(args)
    .filter((key) => !chosen.has(key) && moneyRank(key) >= 0)
    .sort((a, b) => moneyRank(a) - moneyRank(b));
  for (const key of money) chosen.add(key);
  const rest = Object.keys(args).filter((key) => !chosen.has(key));
  return [...first, ...money, ...rest].map((key) => [key, args[key]]);
}

/** The arguments in deciding order within `budget` characters, as `summarizeArguments` writes them. */
export function decidingText(
  args: Record<string, unknown>,
  referenced: readonly string[],
  budget: number,
): ActionSummary {
  return summarizeEntries(decidingEntries(args, referenced), budget);
}

const AMOUNT = new Intl.NumberFormat('en-US', { maximumFractionDigits: 20 });

/** `31,496.75 EUR` when the arguments carry a finite numeric `amount` (currency optional), else null. */
export function moneyText(args: Record<string, unknown>): string | null {
  const { amount, currency } = args;
  if (typeof amount !== 'number' || !Number.isFinite(amount)) return null;
  // A code (`EUR`) as it is; any other text quoted, so it cannot pass for a subject's own words.
  const unit =
    typeof currency !== 'string' || currency === ''
      ? ''
      : ` ${/^[A-Za-z]{1,6}$/.test(currency) ? currency : jsonLine(cut(currency, 40))}`;
  return `${AMOUNT.format(amount)}${unit}`;
}

/** Who receives the action (`Globex`): the first of payee, to, recipient that is a non-empty string. */
export function payeeText(args: Record<string, unknown>): string | null {
  const payee = payeeOf(args);
  return payee === null ? null : cut(showHidden(payee), PAYEE_LENGTH);
}

/** The payee as the agent wrote it, not yet made safe to show (`payeeText` does that). */
export function payeeOf(args: Record<string, unknown>): string | null {
  for (const key of PAYEE_KEYS) {
    const value = args[key];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return null;
}
