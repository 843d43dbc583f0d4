/**
 * Why a hold waits, in words: the deciding rule's conditions as its evidence entry recorded them
 * (`hold.submitted` data.facts: each condition with the value it compared, a type mismatch, the
 * frequency count), e.g. `amount 4200 is more than 1000`.
 */
import type { ConditionFact, HoldFacts } from '../../domain/hold-facts.ts';
import { describeTypeMismatch, type Frequency, type Operator } from '../../domain/rules.ts';
import { jsonLine, nameText } from '../../domain/summary.ts';
import { type Html, html } from '../html.ts';

/** A value in a sentence: one line, hidden characters escaped, long ones shortened (the tree shows it whole). */
const shown = (value: unknown) => {
  const text = jsonLine(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
};

/** An operator in words (the rules table says its conditions with these too). */
export const VERB: Record<Exclude<Operator, 'exists'>, string> = {
  eq: 'is',
  ne: 'is not',
  gt: 'is more than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  in: 'is one of',
  not_in: 'is none of',
  contains: 'contains',
  matches: 'matches the pattern',
};

function conditionInWords({ arg, op, value, actual, type_mismatch }: ConditionFact): string {
  const name = nameText(arg);
  if (type_mismatch)
    return `${describeTypeMismatch({ arg: name, ...type_mismatch })} (${shown(actual)}): a value of the wrong type counts as met`;
  if (op === 'exists') return `${name} is ${value === false ? 'absent' : 'present'}`;
  if (op === 'eq') return `${name} is ${shown(actual)}`;
  return `${name} ${shown(actual)} ${VERB[op]} ${shown(value)}`;
}

const COUNTED: Record<Frequency['by'], string> = {
  tool: 'of this tool',
  agent: 'by this agent',
  tool_and_agent: 'of this tool by this agent',
};

const CLASSIFIED: Record<string, string> = {
  new: 'The tool is new: an admin classifies it.',
  approval: 'The tool is classified approval: every call waits for a person.',
};

/** One sentence per condition, frequency and classification that made the hold wait. */
export function conditionsInWords(facts: HoldFacts | null | undefined): string[] {
  if (!facts) return [];
  const words = (facts.conditions ?? []).map(conditionInWords);
  const frequency = facts.frequency;
  if (frequency)
    words.push(
      `${frequency.count} calls ${COUNTED[frequency.by]} in the last ${frequency.per}, more than ${frequency.more_than}`,
    );
  // The classification decided only when no rule's condition or count did.
  if (words.length === 0 && facts.classification && CLASSIFIED[facts.classification])
    words.push(CLASSIFIED[facts.classification]!);
  return words;
}

/** The argument paths the conditions looked at, for `argumentsView`'s highlight. */
export const heldArguments = (facts: HoldFacts | null | undefined) =>
  (facts?.conditions ?? []).map((condition) => condition.arg);

/** The conditions as a list, or nothing when the facts say nothing (an older hold, say). */
export function conditionsView(facts: HoldFacts | null | undefined, ruleName: string | null): Html | null {
  const words = conditionsInWords(facts);
  if (words.length === 0) return null;
  return html`<div class="conditions">
    <p>Waits because${ruleName ? html` of the rule <strong>${ruleName}</strong>` : null}:</p>
    <ul>
      ${words.map((text) => html`<li>${text}</li>`)}
    </ul>
  </div>`;
}
