/**
 * The service's issues about a rule of a workspace file, on the rule form's fields and in words a
 * person reads: `rules.2.escalate.1.to.0` is the second step's approvers, and zod's "Too big: expected
 * number to be <=20" is "Must be a whole number from 1 to 20". Pure: no I/O.
 */
import type { FieldIssue } from '../../services/errors.ts';
import type { FieldErrors } from './form.ts';

const SHOWN = [
  'name',
  'connection',
  'tool',
  'agent',
  'effect',
  'approvals_required',
  'timeout_minutes',
  'reason',
  'repeat_window_minutes',
  'signed',
  'bulk',
  'self_approval',
  'editable',
];

/** What a value out of its range must be, by form field (`escalate.N.to` for every step). */
const RANGES: Record<string, string> = {
  name: 'Name is required.',
  tool: 'Tool is required.',
  approvals_required: 'Must be a whole number from 1 to 20.',
  timeout_minutes: 'Must be a whole number of minutes, 1 or more.',
  repeat_window_minutes: 'Must be a whole number of minutes from 0 to 1440.',
  'frequency.more_than': 'Must be a whole number from 0 to 1,000,000,000.',
  'remind.before': 'Give at most 10 reminders.',
  'escalate.N.to': 'Choose at least one approver to add.',
  'claim.minutes': 'Must be a whole number of minutes from 1 to 1440.',
  editable: 'Name from 1 to 50 arguments, each at most 200 characters.',
};

/** The service's words for what a field must be, as the form says them. */
export function inWords(field: string, message: string): string {
  const tooLong = /^Too big: expected string to have <=(\d+) characters/.exec(message);
  if (tooLong) return `Must be at most ${tooLong[1]} characters.`;
  if (/^(Too small|Too big|Invalid)\b/.test(message))
    return RANGES[field.replace(/\.\d+\./, '.N.')] ?? 'Is not a value this field takes.';
  const said = message
    .replaceAll('repeat_window_minutes', 'repeat window')
    .replaceAll('timeout_minutes', 'the deadline');
  return `${said.charAt(0).toUpperCase()}${said.slice(1)}${said.endsWith('.') ? '' : '.'}`;
}

/** The form field a path within the edited rule points at (`when.2.value`, `approvers`), or null. */
function formFieldOf([part, index, sub]: string[], rowOf: number[]): string | null {
  if (part === 'when') {
    const row = index === undefined ? undefined : rowOf[Number(index)];
    return row === undefined ? 'when' : `when.${row}.${sub ?? 'value'}`;
  }
  if (part === 'frequency') return `frequency.${index ?? 'more_than'}`;
  if (part === 'approvers') return 'approvers';
  if (part === 'remind') return index === 'every' ? 'remind.every' : 'remind.before';
  // Steps are shown in their order, empty rows left out: a step's index is its row.
  if (part === 'escalate') return `escalate.${index ?? 0}.${sub === 'to' ? 'to' : 'after'}`;
  if (part === 'claim') return index === 'halts_escalation' ? 'claim.halts_escalation' : 'claim.minutes';
  return part !== undefined && SHOWN.includes(part) ? part : null;
}

/**
 * Attaches the issues the service raised about the rule at `rules.<index>` of a workspace file to the
 * form's fields; returns those that belong to no field shown, for the page's summary.
 */
export function attachRuleIssues(
  issues: readonly FieldIssue[],
  index: number,
  rowOf: number[],
  errors: FieldErrors,
): FieldIssue[] {
  const prefix = `rules.${index}.`;
  return issues.filter((issue) => {
    const field = issue.field.startsWith(prefix)
      ? formFieldOf(issue.field.slice(prefix.length).split('.'), rowOf)
      : null;
    if (field) errors[field] ??= inWords(field, issue.message);
    return !field;
  });
}
