/**
 * The decision engine: what happens to a call, decided once at submission (decisions.md, "Which rule
 * decides"). Every matching rule is considered; deny beats approval beats allow; among approval rules
 * the one with the most approvals required, then the shortest deadline. The tool's classification
 * acts as a rule too, and a tool nobody classified needs an admin (fail-closed). The result does not
 * depend on the order of the rules.
 */
import type { EscalationDefinition, RemindDefinition } from './follow-ups.ts';
import { type Effect, type RuleMatch, scopeKey } from './rules.ts';

export type Classification = 'new' | 'allow' | 'approval' | 'deny';

export const DEFAULT_TIMEOUT_MINUTES = 240;
export const ADMINS = 'role:admin';

export interface Outcome {
  effect: Effect;
  /** The rule that decided, named in evidence and in a denial's reason. */
  ruleName: string;
  approvers: string[];
  approvalsRequired: number;
  timeoutMinutes: number;
  /** Shown with a denial. */
  reason: string | null;
  /** What the deciding rule saw, for the evidence entry. */
  facts: Record<string, unknown>;
  /** The deciding approval rule's reminders and escalation steps (none for the classifications). */
  remind: RemindDefinition | null;
  escalate: EscalationDefinition[];
}

export const CLASSIFICATION_RULE: Record<Classification, { name: string; effect: Effect }> = {
  new: { name: 'New tool: needs classification', effect: 'approval' },
  allow: { name: 'Tool classified allow', effect: 'allow' },
  approval: { name: 'Tool classified approval', effect: 'approval' },
  deny: { name: 'Tool classified deny', effect: 'deny' },
};

/** Calls counted per frequency scope (see `scopeKey`), this call included. */
export type Counts = ReadonlyMap<string, number>;

interface Candidate {
  name: string;
  effect: Effect;
  approvers: string[];
  approvalsRequired: number;
  timeoutMinutes: number;
  reason: string | null;
  facts: Record<string, unknown>;
  remind: RemindDefinition | null;
  escalate: EscalationDefinition[];
}

/** The calls counted in a matching rule's frequency scope, or null when the rule counts none. */
const counted = (match: RuleMatch, counts: Counts) =>
  match.rule.frequency && match.scope ? (counts.get(scopeKey(match.scope)) ?? 0) : null;

/** "More than N per hour": a rule that counts calls applies from call N+1 within the window. */
function applies(match: RuleMatch, counts: Counts): boolean {
  const count = counted(match, counts);
  return count === null || count > match.rule.frequency!.more_than;
}

const approvalsRequired = ({ rule }: RuleMatch) =>
  rule.effect === 'approval' ? (rule.approvals_required ?? 1) : 0;
const timeoutMinutes = ({ rule }: RuleMatch) => rule.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES;

/** The deciding rule as an outcome names it (only the deciding rule's facts are built). */
function fromMatch(match: RuleMatch, counts: Counts): Candidate {
  const { rule } = match;
  const facts: Record<string, unknown> = {};
  if (match.conditions.length > 0) facts.conditions = match.conditions;
  const count = counted(match, counts);
  if (count !== null) facts.frequency = { ...rule.frequency, count };
  const approval = rule.effect === 'approval';
  return {
    name: rule.name,
    effect: rule.effect,
    approvers: approval ? (rule.approvers?.length ? rule.approvers : [ADMINS]) : [],
    approvalsRequired: approvalsRequired(match),
    timeoutMinutes: timeoutMinutes(match),
    reason: rule.effect === 'deny' ? rule.reason || `Denied by rule: ${rule.name}` : null,
    facts,
    remind: approval ? (rule.remind ?? null) : null,
    escalate: approval ? (rule.escalate ?? []) : [],
  };
}

function fromClassification(classification: Classification): Candidate {
  const { name, effect } = CLASSIFICATION_RULE[classification];
  return {
    name,
    effect,
    approvers: effect === 'approval' ? [ADMINS] : [],
    approvalsRequired: effect === 'approval' ? 1 : 0,
    timeoutMinutes: DEFAULT_TIMEOUT_MINUTES,
    reason: effect === 'deny' ? `Denied by rule: ${name}` : null,
    facts: { classification },
    remind: null,
    escalate: [],
  };
}

/** Strictest approval first; the name breaks ties so the order of the rules never matters. */
const stricter = (a: RuleMatch, b: RuleMatch): number =>
  approvalsRequired(b) - approvalsRequired(a) || timeoutMinutes(a) - timeoutMinutes(b) || byName(a, b);

const byName = (a: RuleMatch, b: RuleMatch): number =>
  a.rule.name < b.rule.name ? -1 : a.rule.name > b.rule.name ? 1 : 0;

/** The first of `matches` with `effect` in `order` (the first of equals, as a stable sort's). */
function first(matches: RuleMatch[], effect: Effect, order = byName): RuleMatch | undefined {
  let found: RuleMatch | undefined;
  for (const match of matches)
    if (match.rule.effect === effect && (!found || order(match, found) < 0)) found = match;
  return found;
}

export function decide(input: {
  /** Null when the tool was never seen before this call. */
  classification: Classification | null;
  matches: RuleMatch[];
  counts?: Counts;
}): Outcome {
  const classification = input.classification ?? 'new';
  const counts = input.counts ?? new Map();
  const rules = input.matches.filter((match) => applies(match, counts));
  const byClassification = fromClassification(classification);

  // A rule names more than a classification does, so it is reported first. A matching approval rule
  // says who approves and the classification's own approval (admins, one) applies only when none does;
  // a tool nobody classified yet always has the admins among its approvers. A new tool is never
  // allowed: its approval beats allow.
  const deny = first(rules, 'deny');
  const approval = first(rules, 'approval', stricter);
  const allow = first(rules, 'allow');
  let chosen: Candidate;
  if (deny) chosen = fromMatch(deny, counts);
  else if (byClassification.effect === 'deny') chosen = byClassification;
  else if (approval) {
    chosen = fromMatch(approval, counts);
    if (classification === 'new') chosen.approvers = [...new Set([...chosen.approvers, ADMINS])];
  } else if (byClassification.effect === 'approval' || !allow) chosen = byClassification;
  else chosen = fromMatch(allow, counts);
  return {
    effect: chosen.effect,
    ruleName: chosen.name,
    approvers: chosen.approvers,
    approvalsRequired: chosen.approvalsRequired,
    timeoutMinutes: chosen.timeoutMinutes,
    reason: chosen.reason,
    remind: chosen.remind,
    escalate: chosen.escalate,
    facts: {
      ...chosen.facts,
      classification,
      first_seen: input.classification === null,
      matched_rules: rules.map(({ rule }) => rule.name).sort(),
    },
  };
}
