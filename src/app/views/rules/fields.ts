/**
 * The rule form's fields in the order it shows them, each with its element's id and its name in
 * words (for the summary of problems above the form, each linked to its field), and the approver
 * choice the rule and its escalation steps share.
 */
import type { RuleValues } from '../../forms/rules.ts';
import { type Html, html } from '../../html.ts';
import { describedBy, fieldError, selected } from '../form-fields.ts';

/** What the form offers to choose from, read from the workspace. */
export interface RuleChoices {
  connections: string[];
  toolNames: string[];
  approvers: { value: string; label: string }[];
}

/** A choice of approvers; those chosen first, in their order: a browser sends them in the page's order. */
export function approverSelect(
  /** `size`: the rows shown; none: as many as there are choices, 3 to 8. */
  field: { id: string; name: string; size?: number },
  chosen: string[],
  choices: RuleChoices,
  error: string | undefined,
): Html {
  const options = [
    ...chosen.map(
      (a) =>
        choices.approvers.find((o) => o.value === a) ?? { value: a, label: `${a} (not a current approver)` },
    ),
    ...choices.approvers.filter((o) => !chosen.includes(o.value)),
  ];
  return html`<select
      id="${field.id}"
      name="${field.name}"
      multiple
      size="${field.size ?? Math.min(Math.max(options.length, 3), 8)}"
      ${describedBy(field.id, error)}
    >
      ${options.map(
        (o) => html`<option value="${o.value}" ${selected(chosen.includes(o.value))}>${o.label}</option>`,
      )}
    </select>
    ${fieldError(field.id, error)}`;
}

export interface FormField {
  /** As the form's errors name it: `when.2.value`, `escalate.0.to`. */
  field: string;
  /** The element to go to. */
  id: string;
  label: string;
}

const CONDITION_PARTS = { arg: 'argument', op: 'operator', type: 'value type', value: 'value' };

/** Every field of the form as it shows `values`, in the form's order. */
export function fieldsInOrder(values: RuleValues): FormField[] {
  const at = (field: string, id: string, label: string): FormField => ({ field, id, label });
  const conditions = values.conditions.flatMap((_, row) =>
    Object.entries(CONDITION_PARTS).map(([part, words]) =>
      at(`when.${row}.${part}`, `c${row}-${part}`, `Condition ${row + 1}, ${words}`),
    ),
  );
  const steps = values.steps.flatMap((_, row) => [
    at(`escalate.${row}.after`, `e${row}-after`, `Escalation step ${row + 1}, after`),
    at(`escalate.${row}.to`, `e${row}-to`, `Escalation step ${row + 1}, approvers`),
  ]);
  return [
    at('name', 'r-name', 'Name'),
    at('connection', 'r-connection', 'Connection'),
    at('tool', 'r-tool', 'Tool'),
    at('agent', 'r-agent', 'Agent'),
    at('when', 'r-when', 'Conditions'),
    ...conditions,
    at('frequency.more_than', 'r-more-than', 'Frequency, more than'),
    at('frequency.per', 'r-per', 'Frequency, per'),
    at('frequency.by', 'r-by', 'Frequency, counted by'),
    at('effect', 'r-effect', 'Effect'),
    at('timeout_minutes', 'r-timeout', 'Deadline'),
    at('approvers', 'r-approvers', 'Approvers'),
    at('approvals_required', 'r-approvals', 'Approvals required'),
    at('repeat_window_minutes', 'r-repeat-window', 'Same answer to a repeated call for'),
    at('reason', 'r-reason', 'Reason'),
    at('remind.before', 'r-remind-before', 'Remind before the deadline'),
    at('remind.every', 'r-remind-every', 'Remind every'),
    ...steps,
    at('signed', 'r-signed', 'Passkey signature'),
    at('bulk', 'r-bulk', 'Approved in bulk'),
    at('self_approval', 'r-self-approval', 'Requester approves in their client'),
    at('editable', 'r-editable', 'Arguments an approver may change'),
    at('claim.minutes', 'r-claim-minutes', '“I’m on it” lasts'),
    at('claim.halts_escalation', 'r-claim-halts', 'A claim halts escalation'),
  ];
}

/** The form's problems in the form's order, each a link to its field. */
export function problemLinks(values: RuleValues, errors: Record<string, string>): Html[] {
  const fields = fieldsInOrder(values);
  const known = new Set(fields.map((f) => f.field));
  // A problem on a field the form does not show (none expected) is still said, last.
  const others = Object.keys(errors)
    .filter((field) => !known.has(field))
    .map((field) => ({ field, id: 'rule-form', label: field }));
  return [...fields.filter((f) => errors[f.field] !== undefined), ...others].map(
    (f) => html`<a href="#${f.id}">${f.label}</a>: ${errors[f.field]}`,
  );
}
