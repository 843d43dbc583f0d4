/**
 * The rule form: every part of the rule language a person writes (docs/rules.md), each field with its
 * own error; a form never drops what a rule says, so it shows all of it.
 */
import { DEFAULT_TIMEOUT_MINUTES } from '../../../domain/policy.ts';
import { DEFAULT_REPEAT_WINDOW_MINUTES } from '../../../domain/repeat-window.ts';
import { OPERATORS } from '../../../domain/rules.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { type FieldErrors } from '../../forms/form.ts';
import { type ConditionRow, PERIODS, type RuleValues } from '../../forms/rules.ts';
import { type Html, html } from '../../html.ts';
import { configFields, describedBy, fieldError, inputField, selected } from '../form-fields.ts';
import { approverSelect, type RuleChoices } from './fields.ts';
import { approving, followUps } from './follow-ups.ts';

export const PREVIEW_DAYS = 30;
const EMPTY_ROWS = 3;

const OP_LABELS: Record<string, string> = {
  eq: 'eq — equals',
  ne: 'ne — does not equal',
  gt: 'gt — greater than',
  gte: 'gte — at least',
  lt: 'lt — less than',
  lte: 'lte — at most',
  in: 'in — one of a list',
  not_in: 'not_in — none of a list',
  contains: 'contains — text or list contains',
  matches: 'matches — RE2 regular expression',
  exists: 'exists — is present (true/false)',
};
const VALUE_TYPES = { text: 'text', number: 'number', json: 'JSON' };
const COUNT_BY = {
  tool: 'the same tool',
  agent: 'the same agent',
  tool_and_agent: 'the same tool and agent',
};
const EFFECTS = { allow: 'allow', approval: 'needs approval', deny: 'deny' };

/** Where the form posts: the rule it edits, or the list (a new rule). */
export const ruleAction = (original: string) =>
  original ? `/app/admin/rules/${encodeURIComponent(original)}` : '/app/admin/rules';

function conditionRow(row: ConditionRow, index: number, errors: FieldErrors): Html {
  const id = (part: string) => `c${index}-${part}`;
  const error = (part: string) => errors[`when.${index}.${part}`];
  return html`<div class="filters condition" role="group" aria-labelledby="${id('n')}">
    <span class="n" id="${id('n')}">Condition ${index + 1}</span>
    <div>
      <label for="${id('arg')}">Argument</label>
      <input
        id="${id('arg')}"
        name="cond_arg_${index}"
        type="text"
        maxlength="200"
        spellcheck="false"
        value="${row.arg}"
        ${describedBy(id('arg'), error('arg'))}
      />
      ${fieldError(id('arg'), error('arg'))}
    </div>
    <div class="op">
      <label for="${id('op')}">Operator</label>
      <select id="${id('op')}" name="cond_op_${index}" ${describedBy(id('op'), error('op'))}>
        ${OPERATORS.map((op) => html`<option value="${op}" ${selected(row.op === op)}>${OP_LABELS[op]}</option>`)}
      </select>
      ${fieldError(id('op'), error('op'))}
    </div>
    <div>
      <label for="${id('type')}">Value type</label>
      <select id="${id('type')}" name="cond_type_${index}" class="auto">
        ${Object.entries(VALUE_TYPES).map(
          ([type, label]) => html`<option value="${type}" ${selected(row.type === type)}>${label}</option>`,
        )}
      </select>
    </div>
    <div>
      <label for="${id('value')}">Value</label>
      <input
        id="${id('value')}"
        name="cond_value_${index}"
        type="text"
        value="${row.value}"
        spellcheck="false"
        autocomplete="off"
        ${describedBy(id('value'), error('value'))}
      />
      ${fieldError(id('value'), error('value'))}
    </div>
  </div>`;
}

/** The draft as hidden fields: the preview's Save button posts the very rule it replayed. */
export function hiddenFields(values: RuleValues): Html {
  const hidden = (name: string, value: string) =>
    html`<input type="hidden" name="${name}" value="${value}" />`;
  return html`${hidden('name', values.name)} ${hidden('connection', values.connection)}
  ${hidden('tool', values.tool)} ${hidden('agent', values.agent)}
  ${values.conditions.map(
    (c, i) =>
      html`${hidden(`cond_arg_${i}`, c.arg)}${hidden(`cond_op_${i}`, c.op)}${hidden(`cond_type_${i}`, c.type)}${hidden(`cond_value_${i}`, c.value)}`,
  )}
  ${hidden('freq_more_than', values.more_than)} ${hidden('freq_per', values.per)}
  ${hidden('freq_by', values.by)} ${hidden('effect', values.effect)}
  ${values.approvers.map((a) => hidden('approvers', a))}
  ${hidden('approvals_required', values.approvals_required)}
  ${hidden('timeout_minutes', values.timeout_minutes)} ${hidden('reason', values.reason)}
  ${hidden('repeat_window_minutes', values.repeat_window_minutes)}
  ${hidden('remind_before', values.remind_before)} ${hidden('remind_every', values.remind_every)}
  ${values.steps.map(
    (step, i) =>
      html`${hidden(`esc_after_${i}`, step.after)}${step.to.map((to) => hidden(`esc_to_${i}`, to))}`,
  )}
  ${hidden('signed', values.signed)} ${hidden('bulk', values.bulk)}
  ${hidden('claim_minutes', values.claim_minutes)} ${hidden('claim_halts', values.claim_halts)}`;
}

const textField = (
  values: RuleValues,
  errors: FieldErrors,
  name: 'name' | 'tool' | 'agent',
  label: Html | string,
  extra: Html,
) =>
  inputField({ id: `r-${name}`, name, label, type: 'text', value: values[name], error: errors[name], extra });

const numberField = (
  field: { id: string; name: string; label: string; value: string; error: string | undefined },
  extra: Html | null = null,
) => inputField({ ...field, type: 'number', extra: html`min="0" step="1" inputmode="numeric" ${extra}` });

function whichCalls(values: RuleValues, errors: FieldErrors, choices: RuleChoices): Html {
  const connections =
    values.connection && !choices.connections.includes(values.connection)
      ? [...choices.connections, values.connection]
      : choices.connections;
  return html`<fieldset class="box">
    <legend><strong>Which calls</strong></legend>
    <div class="filters">
      <div>
        <label for="r-connection">Connection</label>
        <select id="r-connection" name="connection" ${describedBy('r-connection', errors.connection)}>
          <option value="" ${selected(values.connection === '')}>Any connection</option>
          ${connections.map(
            (c) =>
              html`<option value="${c}" ${selected(values.connection === c)}>
                ${c === 'SDK' ? 'SDK (Hold API)' : c}
              </option>`,
          )}
        </select>
        ${fieldError('r-connection', errors.connection)}
      </div>
      <div>
        ${textField(values, errors, 'tool', html`Tool <span class="muted">(name or glob: <code>payments.*</code>)</span>`, html`required maxlength="200" list="tool-names" autocomplete="off" spellcheck="false"`)}
        <datalist id="tool-names">
          ${choices.toolNames.map((name) => html`<option value="${name}"></option>`)}
        </datalist>
      </div>
      <div>
        ${textField(values, errors, 'agent', html`Agent <span class="muted">(glob; empty: any agent)</span>`, html`maxlength="200" spellcheck="false"`)}
      </div>
    </div>
  </fieldset>`;
}

function conditions(values: RuleValues, errors: FieldErrors): Html {
  const rows = [
    ...values.conditions,
    ...Array.from({ length: EMPTY_ROWS }, () => ({ arg: '', op: 'eq', type: 'text', value: '' })),
  ];
  return html`<fieldset class="box" id="r-when" aria-describedby="conditions-help">
    <legend><strong>Conditions on the arguments</strong> <span class="muted">(all must hold)</span></legend>
    <p class="muted" id="conditions-help">
      The argument is a dotted path, like <code>amount</code>, <code>customer.country</code> or
      <code>items.0.sku</code>. Type the value as it is, without quotes, and say what it is: the text
      <code>1000</code> and the number 1000 differ. For <code>in</code> and <code>not_in</code>, separate the
      items with commas; for <code>matches</code>, type the RE2 pattern as text; for <code>exists</code>,
      <code>true</code>, <code>false</code> or nothing. Choose JSON for anything else: true/false, null, an
      object, or a list whose items hold commas. Leave a row empty to skip it.
    </p>
    ${fieldError('r-when', errors.when)} ${rows.map((row, index) => conditionRow(row, index, errors))}
  </fieldset>`;
}

function frequency(values: RuleValues, errors: FieldErrors): Html {
  return html`<fieldset class="box">
    <legend><strong>Frequency</strong> <span class="muted">(optional)</span></legend>
    <p class="muted">
      The rule applies only to calls beyond this many in the sliding window, this call included.
    </p>
    <div class="filters">
      <div>
        ${numberField({ id: 'r-more-than', name: 'freq_more_than', label: 'More than (calls)', value: values.more_than, error: errors['frequency.more_than'] })}
      </div>
      <div>
        <label for="r-per">Per</label>
        <select id="r-per" name="freq_per" ${describedBy('r-per', errors['frequency.per'])}>
          <option value="" ${selected(values.per === '')}>— no frequency —</option>
          ${PERIODS.map((p) => html`<option value="${p}" ${selected(values.per === p)}>${p}</option>`)}
        </select>
        ${fieldError('r-per', errors['frequency.per'])}
      </div>
      <div>
        <label for="r-by">Counting calls of</label>
        <select id="r-by" name="freq_by" ${describedBy('r-by', errors['frequency.by'])}>
          ${Object.entries(COUNT_BY).map(
            ([by, label]) => html`<option value="${by}" ${selected(values.by === by)}>${label}</option>`,
          )}
        </select>
        ${fieldError('r-by', errors['frequency.by'])}
      </div>
    </div>
  </fieldset>`;
}

function approvers(values: RuleValues, errors: FieldErrors, choices: RuleChoices): Html {
  return html`<div class="filters">
    <div style="flex:2">
      <label for="r-approvers"
        >Approvers
        <span class="muted">(approval only; Ctrl/⌘-click for several; none: role:admin)</span></label
      >
      ${approverSelect({ id: 'r-approvers', name: 'approvers' }, values.approvers, choices, errors.approvers)}
    </div>
    <div>
      ${numberField({ id: 'r-approvals', name: 'approvals_required', label: 'Approvals required (empty: 1)', value: values.approvals_required, error: errors.approvals_required }, html`max="20"`)}
    </div>
  </div>`;
}

function whatHappens(values: RuleValues, errors: FieldErrors, choices: RuleChoices): Html {
  return html`<fieldset class="box">
    <legend><strong>What happens</strong></legend>
    <div class="filters">
      <div>
        <label for="r-effect">Effect</label>
        <select id="r-effect" name="effect" ${describedBy('r-effect', errors.effect)}>
          ${Object.entries(EFFECTS).map(
            ([effect, label]) =>
              html`<option value="${effect}" ${selected(values.effect === effect)}>${label}</option>`,
          )}
        </select>
        ${fieldError('r-effect', errors.effect)}
      </div>
      <div>
        ${numberField({ id: 'r-timeout', name: 'timeout_minutes', label: `Deadline in minutes (approval; empty: ${DEFAULT_TIMEOUT_MINUTES})`, value: values.timeout_minutes, error: errors.timeout_minutes })}
      </div>
      <div>
        ${numberField({ id: 'r-repeat-window', name: 'repeat_window_minutes', label: `Same answer to a repeated MCP call for (minutes; empty: ${DEFAULT_REPEAT_WINDOW_MINUTES})`, value: values.repeat_window_minutes, error: errors.repeat_window_minutes })}
      </div>
    </div>
    <p class="muted" style="margin:0.5rem 0">
      Deny beats approval beats allow, whatever the order of the rules.
    </p>
    ${approvers(values, errors, choices)}
    <label for="r-reason" style="margin-top:0.5rem"
      >Reason given with a denial
      <span class="muted">(empty: “Denied by rule:” and the rule’s name)</span></label
    >
    <textarea id="r-reason" name="reason" maxlength="500" ${describedBy('r-reason', errors.reason)}>
${values.reason}</textarea>
    ${fieldError('r-reason', errors.reason)}
  </fieldset>`;
}

export function ruleForm(
  session: AppSession,
  form: { original: string; version: number | undefined; values: RuleValues; errors: FieldErrors },
  choices: RuleChoices,
): Html {
  const { values, errors } = form;
  return html`<form
    method="post"
    action="${ruleAction(form.original)}"
    class="decide card rule-form"
    id="rule-form"
  >
    ${configFields(session, form.version)}
    ${textField(values, errors, 'name', 'Name', html`required maxlength="200"`)}
    ${whichCalls(values, errors, choices)} ${conditions(values, errors)} ${frequency(values, errors)}
    ${whatHappens(values, errors, choices)} ${followUps(values, errors, choices)} ${approving(values, errors)}
    <div class="buttons">
      <button type="submit" name="action" value="preview" class="secondary">
        Preview on the last ${PREVIEW_DAYS} days
      </button>
      <button type="submit" name="action" value="save">Save rule</button>
      <a href="/app/admin/rules" style="align-self:center">Cancel</a>
    </div>
  </form>`;
}
