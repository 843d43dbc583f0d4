/**
 * The rule form's approval-only parts after the approvers: reminders and escalation steps, then how
 * holds are approved (passkey signature, in bulk, by the requester in their client, with changes to
 * which arguments, claims). Without
 * JavaScript every step row is there (the file's limit is five); empty rows are skipped.
 */
import type { FieldErrors } from '../../forms/form.ts';
import { MAX_STEPS, type StepRow } from '../../forms/rule-follow-ups.ts';
import type { RuleValues } from '../../forms/rules.ts';
import { type Html, html } from '../../html.ts';
import { describedBy, fieldError, inputField, selected } from '../form-fields.ts';
import { approverSelect, type RuleChoices } from './fields.ts';

const textInput = (id: string, name: string, label: Html | string, value: string, error?: string) =>
  inputField({
    id,
    name,
    label,
    type: 'text',
    value,
    error,
    extra: html`maxlength="200" spellcheck="false" autocomplete="off"`,
  });

function stepRow(step: StepRow, index: number, errors: FieldErrors, choices: RuleChoices): Html {
  const id = (part: string) => `e${index}-${part}`;
  return html`<div class="filters condition" role="group" aria-labelledby="${id('n')}">
    <span class="n" id="${id('n')}">Step ${index + 1}</span>
    <div>
      ${textInput(id('after'), `esc_after_${index}`, html`After <span class="muted">(since submission: 15m, 2h)</span>`, step.after, errors[`escalate.${index}.after`])}
    </div>
    <div style="flex:2">
      <label for="${id('to')}">Add approvers <span class="muted">(Ctrl/⌘-click for several)</span></label>
      ${approverSelect({ id: id('to'), name: `esc_to_${index}`, size: 4 }, step.to, choices, errors[`escalate.${index}.to`])}
    </div>
  </div>`;
}

export function followUps(values: RuleValues, errors: FieldErrors, choices: RuleChoices): Html {
  const rows = [
    ...values.steps,
    ...Array.from({ length: Math.max(0, MAX_STEPS - values.steps.length) }, () => ({ after: '', to: [] })),
  ];
  return html`<fieldset class="box" aria-describedby="follow-ups-help">
    <legend>
      <strong>Reminders and escalation</strong> <span class="muted">(approval only; optional)</span>
    </legend>
    <p class="muted" id="follow-ups-help">
      Reminders go to the approvers who have not decided yet. Escalation adds approvers when nobody has
      finished deciding by then, counted from submission: each step later than the one before, all before the
      deadline. Leave a step empty to skip it.
    </p>
    <div class="filters">
      <div>
        ${textInput('r-remind-before', 'remind_before', html`Remind before the deadline <span class="muted">(30m, 5m)</span>`, values.remind_before, errors['remind.before'])}
      </div>
      <div>
        ${textInput('r-remind-every', 'remind_every', html`Remind every <span class="muted">(1h; empty: no)</span>`, values.remind_every, errors['remind.every'])}
      </div>
    </div>
    ${rows.map((step, index) => stepRow(step, index, errors, choices))}
  </fieldset>`;
}

/**
 * A yes or no the rule may leave unsaid. Where "no" means what unsaid means, it is offered only to a
 * rule that says it (`offerNo` false), so that saving such a rule keeps what it says.
 */
function yesNo(
  field: { id: string; name: string; label: Html | string; value: string; error: string | undefined },
  words: { unsaid: string; yes: string; no: string; offerNo: boolean },
): Html {
  const options = [
    ['', words.unsaid],
    ['true', words.yes],
    ...(words.offerNo || field.value === 'false' ? [['false', words.no]] : []),
  ];
  return html`<label for="${field.id}">${field.label}</label>
    <select id="${field.id}" name="${field.name}" ${describedBy(field.id, field.error)}>
      ${options.map(([value, label]) => html`<option value="${value}" ${selected(field.value === value)}>${label}</option>`)}
    </select>
    ${fieldError(field.id, field.error)}`;
}

export function approving(values: RuleValues, errors: FieldErrors): Html {
  return html`<fieldset class="box">
    <legend><strong>Approving</strong> <span class="muted">(approval only)</span></legend>
    <div class="filters">
      <div>
        ${yesNo({ id: 'r-signed', name: 'signed', label: html`Passkey signature on each approval <span class="muted">(else as the workspace says)</span>`, value: values.signed, error: errors.signed }, { unsaid: 'Not required', yes: 'Required', no: 'Not required (false)', offerNo: false })}
      </div>
      <div>
        ${yesNo({ id: 'r-bulk', name: 'bulk', label: html`May be approved in bulk <span class="muted">(default: yes, not four-eyes or signed)</span>`, value: values.bulk, error: errors.bulk }, { unsaid: 'Default', yes: 'Yes', no: 'No', offerNo: true })}
      </div>
      <div>
        ${yesNo({ id: 'r-self-approval', name: 'self_approval', label: html`The requester may approve in their own MCP client <span class="muted">(one approval, not signed)</span>`, value: values.self_approval, error: errors.self_approval }, { unsaid: 'No (default)', yes: 'Yes', no: 'No (false)', offerNo: false })}
      </div>
      <div>
        ${textInput('r-editable', 'editable', html`Arguments an approver may change <span class="muted">(amount, memo; empty: none)</span>`, values.editable, errors.editable)}
      </div>
      <div>
        ${inputField({ id: 'r-claim-minutes', name: 'claim_minutes', label: '“I’m on it” lasts (minutes; empty: 30)', type: 'number', value: values.claim_minutes, error: errors['claim.minutes'], extra: html`min="1" max="1440" step="1" inputmode="numeric"` })}
      </div>
      <div>
        ${yesNo({ id: 'r-claim-halts', name: 'claim_halts', label: html`A claim halts escalation <span class="muted">(steps wait while claimed)</span>`, value: values.claim_halts, error: errors['claim.halts_escalation'] }, { unsaid: 'No (default)', yes: 'Yes', no: 'No (false)', offerNo: false })}
      </div>
    </div>
  </fieldset>`;
}
