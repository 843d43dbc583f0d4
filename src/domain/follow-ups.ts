/**
 * Follow-ups of a pending hold: reminders before its deadline and escalation steps that add approvers
 * when nobody has finished deciding it. The plan is fixed at submission from the deciding rule (or the
 * workspace's default reminders), as its approvers are; these pure functions say when the next one is
 * due and which are due now.
 */

/** A duration as the workspace file writes it: `30m`, `1h`, `2d`. */
export const DURATION = /^([1-9]\d{0,5})([mhd])$/;
const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function durationMs(text: string): number {
  const match = DURATION.exec(text);
  if (!match) throw new Error('not a duration');
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/** `90 minutes` → `1 h 30 min`: how long is left, in words for a message. */
export function durationText(ms: number): string {
  const minutes = Math.max(0, Math.round(ms / 60_000));
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  return `${Math.floor(hours / 24)} d${hours % 24 ? ` ${hours % 24} h` : ''}`;
}

/** As the file and the evidence write it. */
export interface RemindDefinition {
  /** Before the deadline: `[30m, 5m]`. */
  before?: string[];
  /** Every so long from submission: `1h`. */
  every?: string;
}

export interface EscalationDefinition {
  /** After submission. */
  after: string;
  /** Approvers added, as in a rule's `approvers`. */
  to: string[];
}

/** What a hold keeps: durations in milliseconds. */
export interface FollowUpPlan {
  remind: { before: number[]; every: number | null } | null;
  escalate: { after: number; to: string[] }[];
}

export function followUpPlan(
  remind: RemindDefinition | null | undefined,
  escalate: EscalationDefinition[] | null | undefined,
): FollowUpPlan | null {
  const plan: FollowUpPlan = {
    remind:
      remind && (remind.before?.length || remind.every)
        ? {
            before: (remind.before ?? []).map(durationMs),
            every: remind.every ? durationMs(remind.every) : null,
          }
        : null,
    escalate: (escalate ?? []).map((step) => ({ after: durationMs(step.after), to: step.to })),
  };
  return plan.remind || plan.escalate.length > 0 ? plan : null;
}

export interface FollowUpState {
  escalationsDone: number;
  /** The reminder time last acted on; null before the first. */
  remindedAt: number | null;
}

type Window = { createdAt: number; expiresAt: number };

/** The first reminder time after `after`, before the deadline; null when there is none. */
export function nextReminderAt(plan: FollowUpPlan, hold: Window, after: number): number | null {
  if (!plan.remind) return null;
  const times = plan.remind.before.map((before) => hold.expiresAt - before);
  const { every } = plan.remind;
  if (every)
    times.push(hold.createdAt + (Math.floor(Math.max(0, after - hold.createdAt) / every) + 1) * every);
  const next = times.filter((at) => at > after && at > hold.createdAt && at < hold.expiresAt);
  return next.length > 0 ? Math.min(...next) : null;
}

/** When the next follow-up of the hold is due; null when none is left before its deadline. */
export function nextFollowUpAt(plan: FollowUpPlan, hold: Window, state: FollowUpState): number | null {
  const step = plan.escalate[state.escalationsDone];
  const escalation =
    step && hold.createdAt + step.after < hold.expiresAt ? hold.createdAt + step.after : null;
  const reminder = nextReminderAt(plan, hold, state.remindedAt ?? hold.createdAt);
  if (escalation === null) return reminder;
  return reminder === null ? escalation : Math.min(escalation, reminder);
}

/**
 * What is due at `now`: the escalation steps whose time came (in order), and whether a reminder is due.
 * A worker that was away sends one reminder for the times it missed, not one per time.
 */
export function dueFollowUps(plan: FollowUpPlan, hold: Window, state: FollowUpState, now: number) {
  const steps: number[] = [];
  for (let i = state.escalationsDone; i < plan.escalate.length; i++) {
    if (hold.createdAt + plan.escalate[i]!.after > now) break;
    steps.push(i);
  }
  const reminder = nextReminderAt(plan, hold, state.remindedAt ?? hold.createdAt);
  return { steps, remind: reminder !== null && reminder <= now && now < hold.expiresAt };
}
