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

function fromMatch(match: RuleMatch, counts: Counts): Candidate | null {
  const { rule } = match;
  const facts: Record<string, unknown> = {};
  if (match.conditions.length > 0) facts.conditions = match.conditions;
  if (rule.frequency && match.scope) {
    const count = counts.get(scopeKey(match.scope)) ?? 0;
    // "More than N per hour": the rule applies from call N+1 within the window.
    if (count <= rule.frequency.more_than) return null;
    facts.frequency = { ...rule.frequency, count };
  }
  const approval = rule.effect === 'approval';
  return {
    name: rule.name,
    effect: rule.effect,
    approvers: approval ? (rule.approvers?.length ? rule.approvers : [ADMINS]) : [],
    approvalsRequired: approval ? (rule.approvals_required ?? 1) : 0,
    timeoutMinutes: rule.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES,
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
function stricter(a: Candidate, b: Candidate): number {
  return b.approvalsRequired - a.approvalsRequired || a.timeoutMinutes - b.timeoutMinutes || byName(a, b);
}

const byName = (a: Candidate, b: Candidate): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function decide(input: {
  /** Null when the tool was never seen before this call. */
  classification: Classification | null;
  matches: RuleMatch[];
  counts?: Counts;
}): Outcome {
  const classification = input.classification ?? 'new';
  const counts = input.counts ?? new Map();
  const rules = input.matches
    .map((match) => fromMatch(match, counts))
    .filter((candidate) => candidate !== null);
  const byClassification = fromClassification(classification);
  /** The first of `from` with `effect` in `order` (the first of equals, as a stable sort's). */
  const pick = (effect: Effect, from: Candidate[], order = byName) => {
    let first: Candidate | undefined;
    for (const c of from) if (c.effect === effect && (!first || order(c, first) < 0)) first = c;
    return first;
  };

  // A rule names more than a classification does, so it is reported first. A matching approval rule
  // says who approves and the classification's own approval (admins, one) applies only when none does;
  // a tool nobody classified yet always has the admins among its approvers. A new tool is never
  // allowed: its approval beats allow.
  const unclassified = classification === 'new';
  const approval = pick('approval', rules, stricter);
  const chosen =
    pick('deny', rules) ??
    pick('deny', [byClassification]) ??
    (approval && unclassified
      ? { ...approval, approvers: [...new Set([...approval.approvers, ADMINS])] }
      : approval) ??
    pick('approval', [byClassification]) ??
    pick('allow', rules) ??
    pick('allow', [byClassification])!;
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
      matched_rules: rules.map((rule) => rule.name).sort(),
    },
  };
}
