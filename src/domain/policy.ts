/**
 * The decision engine: what happens to a call, decided once at submission. Fail-closed: a tool that
 * nobody classified needs a human.
 */

export type Classification = 'new' | 'allow' | 'approval' | 'deny';
export type Effect = 'allow' | 'approval' | 'deny';

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
  /** What the rule saw, for the evidence entry. */
  facts: Record<string, unknown>;
}

export interface CallFacts {
  connection: string;
  toolName: string;
  agentId: string;
  /** Absent when the tool was never seen before this call. */
  classification: Classification | null;
}

const CLASSIFICATION_RULES: Record<Classification, { name: string; effect: Effect }> = {
  new: { name: 'New tool: needs classification', effect: 'approval' },
  allow: { name: 'Tool classified allow', effect: 'allow' },
  approval: { name: 'Tool classified approval', effect: 'approval' },
  deny: { name: 'Tool classified deny', effect: 'deny' },
};

export function decide(call: CallFacts): Outcome {
  const classification = call.classification ?? 'new';
  const rule = CLASSIFICATION_RULES[classification];
  return {
    effect: rule.effect,
    ruleName: rule.name,
    approvers: rule.effect === 'approval' ? [ADMINS] : [],
    approvalsRequired: rule.effect === 'approval' ? 1 : 0,
    timeoutMinutes: DEFAULT_TIMEOUT_MINUTES,
    reason: rule.effect === 'deny' ? `Denied by rule: ${rule.name}` : null,
    facts: { classification, first_seen: call.classification === null },
  };
}
