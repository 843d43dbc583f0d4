/**
 * What a request says before it is opened (issue 39): the e-mail subject and the Slack and Teams
 * title carry the action's deciding values and why it is the reader's, so that a full mailbox can be
 * read from its subjects. Agent-supplied text stays on one line and, unless a plain name, quoted.
 */
import { moneyText, payeeOf } from '../domain/deciding-values.ts';
import { durationText } from '../domain/follow-ups.ts';
import type { Hold } from '../domain/hold.ts';
import { cut, jsonLine, nameText, showHidden } from '../domain/summary.ts';

/** A member's name and when their delegation ends (not agent text). */
export interface Principal {
  name: string;
  until: number;
}

/** A reminder: how long is left to decide and who approved so far (members' names, not agent text). */
export interface Reminder {
  leftMs: number;
  approvedBy: string[];
}

/** Why the reader is asked, besides the hold's rule. */
export interface Why {
  /** A reminder: how long is left, who approved so far. */
  reminder?: Reminder;
  /** To a delegate: the member they decide for. */
  forWhom?: Principal;
  /** An escalation step brought the reader in. */
  escalated?: boolean;
}

/** `Approve payments.send 31,496.75 EUR to Globex`: the tool and, when the arguments name them, money and payee. */
export function actionTitle(hold: Pick<Hold, 'toolName' | 'arguments'>): string {
  const money = moneyText(hold.arguments);
  const payee = payeeOf(hold.arguments);
  // A payee that is not a plain name is quoted as JSON writes it, so it cannot pass for the title's
  // own words; a URL is no plain name (it would be linked).
  const to = payee && (/^[\w.@-]{1,60}$/.test(payee) ? payee : jsonLine(cut(payee, 60)));
  return ['Approve', nameText(hold.toolName), money, to && `to ${to}`].filter(Boolean).join(' ');
}

/**
 * `Large payments need two approvers; escalated to you`: the rule, then each reason the hold is the
 * reader's now (escalated, a reminder, a four-eyes second, deciding for someone away).
 */
export function reasonText(hold: Hold, why: Why): string {
  const reasons = [hold.ruleName === null ? 'needs approval' : showHidden(hold.ruleName)];
  if (why.escalated) reasons.push('escalated to you');
  if (why.reminder) reasons.push(`reminder, ${durationText(why.reminder.leftMs)} left`);
  if (hold.status === 'pending' && hold.approvalsReceived > 0)
    reasons.push(`${hold.approvalsReceived} of ${hold.approvalsRequired} approvals in`);
  if (why.forWhom) reasons.push(`for ${why.forWhom.name}, who is away`);
  return reasons.join('; ');
}

/** `Approve payments.send 31,496.75 EUR to Globex — Large payments need two approvers; escalated to you`. */
export const requestTitle = (hold: Hold, why: Why) => `${actionTitle(hold)} — ${reasonText(hold, why)}`;
