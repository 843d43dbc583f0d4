/**
 * The kill switch (docs/security.md): while a workspace is frozen, every new hold is denied by this
 * named rule, whatever the workspace's rules say, and its reason carries the admin's.
 */
import type { Outcome } from './policy.ts';

export const FROZEN_RULE = 'Workspace frozen';

/** The most a freeze's reason may say. */
export const MAX_FREEZE_REASON = 500;

export interface Freeze {
  at: number;
  reason: string;
  /** Who froze it: an app member's e-mail, an API key, or the operator's command line. */
  by: string;
}

/** Why an approval is refused while the workspace is frozen, to the member who tried (every channel). */
export const FROZEN_APPROVAL =
  'The workspace is frozen: nothing is approved until an admin unfreezes it. Rejecting still works.';

/** The denial's reason, as the hold's decision and its MCP envelope give it. */
export const frozenReason = (freeze: Freeze) => `The workspace is frozen: ${freeze.reason}`;

/** The outcome of every submission while the workspace is frozen. */
export function frozenOutcome(freeze: Freeze): Outcome {
  return {
    effect: 'deny',
    ruleName: FROZEN_RULE,
    approvers: [],
    approvalsRequired: 0,
    timeoutMinutes: 0,
    reason: frozenReason(freeze),
    facts: { frozen_at: new Date(freeze.at).toISOString(), frozen_by: freeze.by },
    remind: null,
    escalate: [],
  };
}

/** `workspace.frozen` and `workspace.unfrozen` as webhook events: `id` is their own reference. */
export function freezeEventBody(
  orgId: string,
  change: { frozen: boolean; reason: string | null; by: string; seq: number },
  now: number,
) {
  const event = change.frozen ? ('workspace.frozen' as const) : ('workspace.unfrozen' as const);
  return {
    event,
    created_at: new Date(now).toISOString(),
    id: `${change.frozen ? 'freeze' : 'unfreeze'}:${change.seq}`,
    data: { orgId, reason: change.reason, by: change.by },
  };
}
