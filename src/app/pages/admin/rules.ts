/**
 * The rule builder: tools to classify, the rule list, and a form that covers the whole rule language
 * (docs/rules.md), with a preview that replays the last 30 days against the draft before saving.
 * Saving replaces the rule set through `applyConfig`, like `approvals apply`.
 */
import type { FastifyInstance } from 'fastify';
import { type Classification, DEFAULT_TIMEOUT_MINUTES } from '../../../domain/policy.ts';
import { describeTypeMismatch, OPERATORS, type RuleDefinition } from '../../../domain/rules.ts';
import { crossCheck, type WorkspaceConfig } from '../../../services/config-file.ts';
import { approveWaitingHolds, toolsOf, waitingHoldsOfTool } from '../../../services/classify-tool.ts';
import { type FieldIssue, ServiceError } from '../../../services/errors.ts';
import { currentConfigVersion } from '../../../services/apply-config.ts';
import type { AppSession } from '../../../services/sign-in.ts';
import { followUpsText, type SimulationReport, simulatePolicy } from '../../../services/simulate-policy.ts';
import type { Tool } from '../../../store/tools.ts';
import { type Html, html, time, when } from '../../html.ts';
import { VERB } from '../../views/conditions.ts';
import { field, fields, type Form, type PageDeps, problemPage, sendPage } from '../../respond.ts';
import {
  ADMIN,
  adminPage,
  applyChange,
  checkConfig,
  confirmCard,
  configFields,
  currentConfig,
  describedBy,
  describeIssue,
  fieldError,
  inputField,
  issueSummary,
  selected,
  readAtOf,
  versionPassedOn,
} from './shared.ts';

const PREVIEW_DAYS = 30;
const EXAMPLES_SHOWN = 10;
const EMPTY_ROWS = 3;
const MAX_ROWS = 60;
const WHOLE = /^\d{1,10}$/;
const PERIODS = ['minute', 'hour', 'day'] as const;
const COUNT_BY = {
  tool: 'the same tool',
  agent: 'the same agent',
  tool_and_agent: 'the same tool and agent',
};
const EFFECTS = { allow: 'allow', approval: 'needs approval', deny: 'deny' } as const;
const CLASSIFICATIONS = ['allow', 'approval', 'deny'] as const;

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

const NOTICES: Record<string, string> = {
  saved: 'Rule saved. It decides every hold submitted from now on.',
  deleted: 'Rule deleted.',
  classified: 'Tool classified. Its next calls follow the new classification.',
};

/** How a condition's value is typed: text as it is, numbers as numbers, anything else as JSON. */
const VALUE_TYPES = { text: 'text', number: 'number', json: 'JSON' } as const;
type ValueType = keyof typeof VALUE_TYPES;
const ORDERING = ['gt', 'gte', 'lt', 'lte'];
const LISTS = ['in', 'not_in'];
const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

interface ConditionRow {
  arg: string;
  op: string;
  type: string;
  value: string;
}

/** The rule form as typed: strings, kept as they are so a refused form comes back unchanged. */
interface RuleValues {
  original: string;
  name: string;
  connection: string;
  tool: string;
  agent: string;
  conditions: ConditionRow[];
  more_than: string;
  per: string;
  by: string;
  effect: string;
  approvers: string[];
  approvals_required: string;
  timeout_minutes: string;
  reason: string;
  /** The configuration's version the form was read at (none: a form from before versions). */
  version: number | undefined;
}

const blankRule: RuleValues = {
  original: '',
  name: '',
  connection: '',
  tool: '',
  agent: '',
  conditions: [],
  more_than: '',
  per: '',
  by: 'tool',
  effect: 'approval',
  approvers: [],
  approvals_required: '',
  timeout_minutes: '',
  reason: '',
  version: 0,
};

const valuesOfRule = (rule: RuleDefinition, version: number): RuleValues => ({
  version,
  original: rule.name,
  name: rule.name,
  connection: rule.connection ?? '',
  tool: rule.tool,
  agent: rule.agent ?? '',
  conditions: (rule.when ?? []).map((c) => ({ arg: c.arg, op: c.op, ...typedValue(c.value) })),
  more_than: rule.frequency ? String(rule.frequency.more_than) : '',
  per: rule.frequency?.per ?? '',
  by: rule.frequency?.by ?? 'tool',
  effect: rule.effect,
  approvers: rule.approvers ?? [],
  approvals_required: rule.approvals_required === undefined ? '' : String(rule.approvals_required),
  timeout_minutes: rule.timeout_minutes === undefined ? '' : String(rule.timeout_minutes),
  reason: rule.reason ?? '',
});

/**
 * A stored value as the form shows it: text and numbers (and lists of either, comma-separated) as
 * typed, anything else as JSON.
 */
function typedValue(value: unknown): { type: ValueType; value: string } {
  if (value === undefined) return { type: 'text', value: '' };
  if (typeof value === 'string') return { type: 'text', value };
  if (typeof value === 'number') return { type: 'number', value: String(value) };
  if (Array.isArray(value) && value.length > 0) {
    if (value.every((item) => typeof item === 'number')) return { type: 'number', value: value.join(', ') };
    // Only items that survive the split on commas and the trim of each item come back as text.
    if (
      value.every(
        (item) => typeof item === 'string' && item !== '' && item === item.trim() && !item.includes(','),
      )
    )
      return { type: 'text', value: value.join(', ') };
  }
  return { type: 'json', value: JSON.stringify(value) };
}

/** A typed condition value, or the reason it cannot be read. `in`/`not_in` take comma-separated items. */
function parseValue(row: ConditionRow): { value?: unknown } | { error: string } {
  if (row.value === '') return {};
  // `exists` takes a yes or no whatever the type: there is nothing else it could mean.
  if (row.op === 'exists') {
    if (row.value === 'true' || row.value === 'false') return { value: row.value === 'true' };
    return { error: 'Write true or false, or leave it empty (true).' };
  }
  const list = LISTS.includes(row.op);
  const items = list && row.type !== 'json' ? row.value.split(',').map((item) => item.trim()) : [row.value];
  if (row.type === 'json') {
    try {
      return { value: JSON.parse(row.value) };
    } catch {
      return {
        error:
          'Is not valid JSON. Write true, null, a list as ["DE", "FR"], or text in double quotes as "EUR".',
      };
    }
  }
  if (row.type === 'number') {
    const numbers = items.map((item) => item.trim());
    if (!numbers.every((item) => NUMBER.test(item)))
      return {
        error: `Is not a number${list ? ' list' : ''}: write it as 1000 or 12.5${list ? ', items separated by commas' : ''}, or choose the type text.`,
      };
    return { value: list ? numbers.map(Number) : Number(numbers[0]) };
  }
  if (row.type !== 'text') return { error: 'Choose text, number or JSON.' };
  // Text ordered against text puts "900" after "1000": a number typed as text is almost surely a mistake.
  if (ORDERING.includes(row.op) && NUMBER.test(row.value.trim()))
    return {
      error:
        'Is a number typed as text, and text compares letter by letter. Choose the type number, or JSON with the text in double quotes.',
    };
  return { value: list ? items : row.value };
}

/** Reads the form; empty condition rows are dropped, so row numbers are those shown again. */
function valuesOfForm(body: Form): RuleValues {
  const conditions: ConditionRow[] = [];
  for (let row = 0; row < MAX_ROWS; row++) {
    if (body?.[`cond_arg_${row}`] === undefined && body?.[`cond_value_${row}`] === undefined) continue;
    const condition = {
      arg: field(body, `cond_arg_${row}`),
      op: field(body, `cond_op_${row}`) || 'eq',
      type: field(body, `cond_type_${row}`) || 'text',
      // Untrimmed: a pattern or a text may start or end with a space.
      value: fields(body, `cond_value_${row}`).at(-1) ?? '',
    };
    if (condition.arg || condition.value) conditions.push(condition);
  }
  return {
    version: readAtOf(body),
    original: field(body, 'original'),
    name: field(body, 'name'),
    connection: field(body, 'connection'),
    tool: field(body, 'tool'),
    agent: field(body, 'agent'),
    conditions,
    more_than: field(body, 'freq_more_than'),
    per: field(body, 'freq_per'),
    by: field(body, 'freq_by') || 'tool',
    effect: field(body, 'effect'),
    approvers: fields(body, 'approvers').filter(Boolean),
    approvals_required: field(body, 'approvals_required'),
    timeout_minutes: field(body, 'timeout_minutes'),
    reason: field(body, 'reason'),
  };
}

/** The draft rule, the problems found before the service sees it, and which form row each condition came from. */
function ruleOfValues(values: RuleValues) {
  const errors: Record<string, string> = {};
  const when: { arg: string; op: string; value?: unknown }[] = [];
  const rowOf: number[] = [];
  values.conditions.forEach((row, index) => {
    let ok = true;
    if (!row.arg) {
      errors[`when.${index}.arg`] = 'Name the argument, like amount or customer.country.';
      ok = false;
    }
    if (!(OPERATORS as readonly string[]).includes(row.op)) {
      errors[`when.${index}.op`] = 'Choose an operator.';
      ok = false;
    }
    const parsed = parseValue(row);
    if ('error' in parsed) {
      errors[`when.${index}.value`] = parsed.error;
      ok = false;
    }
    if (!ok) return;
    const { value } = parsed as { value?: unknown };
    rowOf.push(index);
    when.push({ arg: row.arg, op: row.op, ...(value === undefined ? {} : { value }) });
  });
  const rule: Record<string, unknown> = { name: values.name };
  if (values.connection) rule.connection = values.connection;
  rule.tool = values.tool;
  if (values.agent) rule.agent = values.agent;
  if (when.length > 0) rule.when = when;
  if (values.more_than || values.per) {
    if (!WHOLE.test(values.more_than)) errors['frequency.more_than'] = 'Give a whole number, 0 or more.';
    if (!(PERIODS as readonly string[]).includes(values.per))
      errors['frequency.per'] = 'Choose minute, hour or day.';
    if (!Object.hasOwn(COUNT_BY, values.by)) errors['frequency.by'] = 'Choose what to count.';
    rule.frequency = { more_than: Number(values.more_than), per: values.per, by: values.by };
  }
  rule.effect = values.effect;
  if (values.effect === 'approval') {
    if (values.approvers.length > 0) rule.approvers = values.approvers;
    if (values.approvals_required) {
      if (WHOLE.test(values.approvals_required)) rule.approvals_required = Number(values.approvals_required);
      else errors.approvals_required = 'Give a whole number from 1 to 20.';
    }
  }
  if (values.timeout_minutes) {
    if (WHOLE.test(values.timeout_minutes)) rule.timeout_minutes = Number(values.timeout_minutes);
    else errors.timeout_minutes = 'Give a whole number of minutes, 1 or more.';
  }
  if (values.reason) rule.reason = values.reason;
  return { rule: rule as unknown as RuleDefinition, errors, rowOf };
}

/**
 * The edited rule with what the form does not show (reminders, escalation, `signed`) kept from the rule
 * as stored: a form never drops a field it does not show. They belong to approval rules only.
 */
function keepUnshown(stored: RuleDefinition | undefined, edited: RuleDefinition): RuleDefinition {
  if (!stored || edited.effect !== 'approval') return edited;
  const { remind, escalate, signed } = stored;
  return { ...edited, ...(remind && { remind }), ...(escalate && { escalate }), ...(signed && { signed }) };
}

/** The form field a service issue about the edited rule points at (`when.2.value`, `approvers`, …). */
function formKey(rest: string[], rowOf: number[]): string | null {
  const [part, index, sub] = rest;
  if (part === 'when') {
    if (index === undefined) return 'when';
    const row = rowOf[Number(index)];
    return row === undefined ? 'when' : `when.${row}.${sub ?? 'value'}`;
  }
  if (part === 'frequency') return index ? `frequency.${index}` : 'frequency.more_than';
  if (part === 'approvers') return 'approvers';
  if (
    part &&
    [
      'name',
      'connection',
      'tool',
      'agent',
      'effect',
      'approvals_required',
      'timeout_minutes',
      'reason',
    ].includes(part)
  )
    return part;
  return null;
}

/** Words for a form key, for the summary above the form. */
function labelOf(key: string): string {
  const condition = key.match(/^when\.(\d+)\.(\w+)$/);
  if (condition)
    return `Condition ${Number(condition[1]) + 1}, ${condition[2] === 'arg' ? 'argument' : condition[2]}`;
  return (
    {
      when: 'Conditions',
      'frequency.more_than': 'Frequency, more than',
      'frequency.per': 'Frequency, per',
      'frequency.by': 'Frequency, counted by',
      approvals_required: 'Approvals required',
      timeout_minutes: 'Deadline',
    }[key] ?? key.charAt(0).toUpperCase() + key.slice(1)
  );
}

interface FormContext {
  connections: string[];
  toolNames: string[];
  approverOptions: { value: string; label: string }[];
}

function formContext(ctxTools: Tool[], config: WorkspaceConfig): FormContext {
  const connections = new Set<string>(['SDK']);
  for (const tool of ctxTools) connections.add(tool.connection);
  for (const rule of config.rules ?? []) if (rule.connection) connections.add(rule.connection);
  const approverOptions = [
    { value: 'role:admin', label: 'role:admin — every admin' },
    { value: 'role:approver', label: 'role:approver — every approver' },
    ...Object.entries(config.groups ?? {}).map(([name, emails]) => ({
      value: `group:${name}`,
      label: `group:${name} — ${emails.length} member${emails.length === 1 ? '' : 's'}`,
    })),
    ...(config.members ?? [])
      .filter((m) => m.role !== 'viewer')
      .map((m) => ({ value: m.email, label: `${m.name} <${m.email}>` })),
  ];
  return {
    connections: [...connections].sort(),
    toolNames: [...new Set(ctxTools.map((tool) => tool.name))].sort(),
    approverOptions,
  };
}

function conditionRow(row: ConditionRow, index: number, errors: Record<string, string>): Html {
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
    <div>
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

function hiddenFields(values: RuleValues): Html {
  const hidden = (name: string, value: string) =>
    html`<input type="hidden" name="${name}" value="${value}" />`;
  return html`${hidden('original', values.original)} ${hidden('name', values.name)}
  ${hidden('connection', values.connection)} ${hidden('tool', values.tool)} ${hidden('agent', values.agent)}
  ${values.conditions.map(
    (c, i) =>
      html`${hidden(`cond_arg_${i}`, c.arg)}${hidden(`cond_op_${i}`, c.op)}${hidden(`cond_type_${i}`, c.type)}${hidden(`cond_value_${i}`, c.value)}`,
  )}
  ${hidden('freq_more_than', values.more_than)} ${hidden('freq_per', values.per)}
  ${hidden('freq_by', values.by)} ${hidden('effect', values.effect)}
  ${values.approvers.map((a) => hidden('approvers', a))}
  ${hidden('approvals_required', values.approvals_required)}
  ${hidden('timeout_minutes', values.timeout_minutes)} ${hidden('reason', values.reason)}`;
}

function ruleForm(
  session: AppSession,
  values: RuleValues,
  errors: Record<string, string>,
  context: FormContext,
): Html {
  const text = (
    name: keyof RuleValues,
    id: string,
    label: Html | string,
    extra: Html | null = null,
    key: string = name,
  ) =>
    inputField({ id, name, label, type: 'text', value: values[name] as string, error: errors[key], extra });
  const number = (
    name: string,
    id: string,
    label: string,
    value: string,
    key: string,
    extra: Html | null = null,
  ) =>
    inputField({
      id,
      name,
      label,
      type: 'number',
      value,
      error: errors[key],
      extra: html`min="0" step="1" inputmode="numeric" ${extra}`,
    });
  const connections =
    values.connection && !context.connections.includes(values.connection)
      ? [...context.connections, values.connection]
      : context.connections;
  const approverOptions = [
    ...context.approverOptions,
    ...values.approvers
      .filter((a) => !context.approverOptions.some((o) => o.value === a))
      .map((a) => ({ value: a, label: `${a} (not a current approver)` })),
  ];
  const rows = [
    ...values.conditions,
    ...Array.from({ length: EMPTY_ROWS }, () => ({ arg: '', op: 'eq', type: 'text', value: '' })),
  ];
  return html`<form method="post" action="/app/admin/rules/save" class="decide card" id="rule-form">
    ${configFields(session, values.version)}
    <input type="hidden" name="original" value="${values.original}" />
    ${text('name', 'r-name', 'Name', html`required maxlength="200"`)}

    <fieldset class="box">
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
          ${text('tool', 'r-tool', html`Tool <span class="muted">(name or glob: <code>payments.*</code>)</span>`, html`required maxlength="200" list="tool-names" autocomplete="off" spellcheck="false"`)}
          <datalist id="tool-names">
            ${context.toolNames.map((name) => html`<option value="${name}"></option>`)}
          </datalist>
        </div>
        <div>
          ${text('agent', 'r-agent', html`Agent <span class="muted">(glob; empty: any agent)</span>`, html`maxlength="200" spellcheck="false"`)}
        </div>
      </div>
    </fieldset>

    <fieldset class="box" aria-describedby="conditions-help">
      <legend><strong>Conditions on the arguments</strong> <span class="muted">(all must hold)</span></legend>
      <p class="muted" id="conditions-help">
        The argument is a dotted path, like <code>amount</code>, <code>customer.country</code> or
        <code>items.0.sku</code>. Type the value as it is, without quotes, and say what it is: the text
        <code>1000</code> and the number 1000 differ. For <code>in</code> and <code>not_in</code>, separate
        the items with commas; for <code>matches</code>, type the RE2 pattern as text; for
        <code>exists</code>, <code>true</code>, <code>false</code> or nothing. Choose JSON for anything else:
        true/false, null, an object, or a list whose items hold commas. Leave a row empty to skip it.
      </p>
      ${fieldError('r-when', errors.when)} ${rows.map((row, index) => conditionRow(row, index, errors))}
    </fieldset>

    <fieldset class="box">
      <legend><strong>Frequency</strong> <span class="muted">(optional)</span></legend>
      <p class="muted">
        The rule applies only to calls beyond this many in the sliding window, this call included.
      </p>
      <div class="filters">
        <div>
          ${number('freq_more_than', 'r-more-than', 'More than (calls)', values.more_than, 'frequency.more_than')}
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
    </fieldset>

    <fieldset class="box">
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
          ${number('timeout_minutes', 'r-timeout', `Deadline in minutes (approval; empty: ${DEFAULT_TIMEOUT_MINUTES})`, values.timeout_minutes, 'timeout_minutes')}
        </div>
      </div>
      <p class="muted" style="margin:0.5rem 0">
        Deny beats approval beats allow, whatever the order of the rules.
      </p>
      <div class="filters">
        <div style="flex:2">
          <label for="r-approvers"
            >Approvers
            <span class="muted">(approval only; Ctrl/⌘-click for several; none: role:admin)</span></label
          >
          <select
            id="r-approvers"
            name="approvers"
            multiple
            size="${Math.min(Math.max(approverOptions.length, 3), 8)}"
            ${describedBy('r-approvers', errors.approvers)}
          >
            ${approverOptions.map(
              (o) =>
                html`<option value="${o.value}" ${selected(values.approvers.includes(o.value))}>
                  ${o.label}
                </option>`,
            )}
          </select>
          ${fieldError('r-approvers', errors.approvers)}
        </div>
        <div>
          ${number('approvals_required', 'r-approvals', 'Approvals required (empty: 1)', values.approvals_required, 'approvals_required', html`max="20"`)}
        </div>
      </div>
      <label for="r-reason" style="margin-top:0.5rem"
        >Reason given with a denial
        <span class="muted">(empty: “Denied by rule:” and the rule’s name)</span></label
      >
      <textarea id="r-reason" name="reason" maxlength="500" ${describedBy('r-reason', errors.reason)}>
${values.reason}</textarea>
      ${fieldError('r-reason', errors.reason)}
    </fieldset>

    <div class="buttons">
      <button type="submit" name="action" value="preview" class="secondary">
        Preview on the last ${PREVIEW_DAYS} days
      </button>
      <button type="submit" name="action" value="save">Save rule</button>
      <a href="/app/admin/rules" style="align-self:center">Cancel</a>
    </div>
  </form>`;
}

const effectBadge = (effect: Classification | string) =>
  html`<span class="status ${{ allow: 'approved', approval: 'pending', deny: 'rejected' }[effect] ?? ''}"
    >${effect === 'approval' ? 'approval' : effect}</span
  >`;

const describeDecision = (d: SimulationReport['examples'][number]['actual']) =>
  html`${effectBadge(d.effect)}${d.effect === 'approval' ? html` ×${d.approvals_required}, ${d.timeout_minutes} min` : null}
    <span class="muted">${d.rule ?? '—'}</span>`;

function previewReport(session: AppSession, values: RuleValues, report: SimulationReport): Html {
  const examples = report.examples.slice(0, EXAMPLES_SHOWN);
  return html`<section class="card" id="preview" aria-labelledby="preview-title">
    <h2 id="preview-title">Preview: the last ${PREVIEW_DAYS} days with this rule</h2>
    <p>
      Replayed <strong>${report.holds}</strong> holds from ${time(Date.parse(report.period.from))} to
      ${time(Date.parse(report.period.to))} (${report.rules.current} rules now, ${report.rules.draft} in the
      draft).
    </p>
    <p><strong>${report.changed}</strong> would be decided differently, ${report.unchanged} the same.</p>
    ${when(
      report.transitions.length > 0,
      () =>
        html`<table class="responsive">
          <thead>
            <tr>
              <th>Was</th>
              <th>Would be</th>
              <th>Holds</th>
            </tr>
          </thead>
          <tbody>
            ${report.transitions.map(
              (t) =>
                html`<tr>
                  <td data-label="Was">${effectBadge(t.from)}</td>
                  <td data-label="Would be">
                    ${effectBadge(t.to)}
                    ${when(
                      t.from === 'approval' && t.to === 'approval',
                      () => html`<span class="muted">other approvals or deadline</span>`,
                    )}
                  </td>
                  <td data-label="Holds">${t.count}</td>
                </tr>`,
            )}
          </tbody>
        </table>`,
    )}
    ${when(
      report.pending.length > 0,
      () =>
        html`<h3>Holds that would wait for people</h3>
          <ul>
            ${report.pending.map(
              (p) =>
                html`<li>
                  <strong>${p.rule}</strong>: ${p.holds} ${p.holds === 1 ? 'hold' : 'holds'};
                  ${followUpsText(p)}
                </li>`,
            )}
          </ul>`,
    )}
    ${when(
      examples.length > 0,
      () =>
        html`<h3>
            Examples${report.changed > examples.length ? html` (${examples.length} of ${report.changed})` : null}
          </h3>
          <table class="responsive">
            <thead>
              <tr>
                <th>Hold</th>
                <th>Call</th>
                <th>Was</th>
                <th>Would be</th>
              </tr>
            </thead>
            <tbody>
              ${examples.map(
                (e) =>
                  html`<tr>
                    <td><a href="/app/holds/${e.id}">${time(Date.parse(e.created_at))}</a></td>
                    <td>
                      ${e.connection}/<strong>${e.tool_name}</strong> <span class="muted">by ${e.agent}</span>
                    </td>
                    <td data-label="Was">${describeDecision(e.actual)}</td>
                    <td data-label="Would be">
                      ${describeDecision(e.draft)}
                      ${e.draft.type_mismatches.map((m) => html`<br /><span class="muted">${describeTypeMismatch(m)}</span>`)}
                      ${when(
                        !!e.draft.remind || e.draft.escalate.length > 0,
                        () => html`<br /><span class="muted">${followUpsText(e.draft)}</span>`,
                      )}
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
    )}
    <p class="muted">
      Replayed with each tool's classification of today; a change of approvers alone is not counted. Nothing
      is saved yet.
    </p>
    <form method="post" action="/app/admin/rules/save" class="row">
      ${configFields(session, values.version)} ${hiddenFields(values)}
      <button type="submit" name="action" value="save">Save this rule</button>
      <span class="muted">or change the form below and preview again.</span>
    </form>
  </section>`;
}

/** A value in words: text in quotes as it is (a pattern unescaped), numbers bare, anything else as JSON. */
const valueText = (value: unknown): Html =>
  typeof value === 'string'
    ? html`“<code>${value}</code>”`
    : Array.isArray(value)
      ? html`${value.map((item, i) => html`${i > 0 ? ', ' : null}${valueText(item)}`)}`
      : html`<code>${JSON.stringify(value)}</code>`;

/** `amount is more than 1000`, `command matches the pattern “rm -rf”`, `ticket is present`. */
function conditionText(rule: RuleDefinition): Html {
  if (!rule.when?.length) return html`<span class="muted">—</span>`;
  return html`${rule.when.map(
    (c, i) =>
      html`${i > 0 ? html`<br />` : null}<code>${c.arg}</code> ${
          c.op === 'exists'
            ? c.value === false
              ? 'is absent'
              : 'is present'
            : html`${VERB[c.op]} ${valueText(c.value)}`
        }`,
  )}`;
}

function ruleTable(session: AppSession, version: number, rules: RuleDefinition[]): Html {
  if (rules.length === 0)
    return html`<p class="empty card">
      No rules yet: every call follows its tool's classification.
      <a href="/app/admin/rules/new">Write the first rule</a>.
    </p>`;
  return html`<table class="responsive" id="rule-list">
    <thead>
      <tr>
        <th>Name</th>
        <th>Matches</th>
        <th>Conditions</th>
        <th>Frequency</th>
        <th>Effect</th>
        <th>Approvers</th>
        <th>Approvals</th>
        <th>Deadline</th>
        <th><span class="muted">Actions</span></th>
      </tr>
    </thead>
    <tbody>
      ${rules.map((rule) => {
        const approval = rule.effect === 'approval';
        const none = html`<span class="muted">—</span>`;
        return html`<tr>
          <td><strong>${rule.name}</strong></td>
          <td data-label="Matches">
            <code>${rule.tool}</code>
            <span class="muted"
              >on
              ${rule.connection ?? 'any connection'}${rule.agent ? html`, agent <code>${rule.agent}</code>` : null}</span
            >
          </td>
          <td data-label="Conditions">${conditionText(rule)}</td>
          <td data-label="Frequency">
            ${
              rule.frequency
                ? html`more than ${rule.frequency.more_than} per ${rule.frequency.per}
                    <span class="muted">by ${rule.frequency.by.replaceAll('_', ' ')}</span>`
                : none
            }
          </td>
          <td data-label="Effect">
            ${effectBadge(rule.effect)}
            ${when(rule.effect === 'deny' && rule.reason, () => html`<br /><span class="muted">${rule.reason}</span>`)}
          </td>
          <td data-label="Approvers">
            ${approval ? (rule.approvers?.length ? rule.approvers.join(', ') : 'role:admin') : none}
          </td>
          <td data-label="Approvals">${approval ? (rule.approvals_required ?? 1) : none}</td>
          <td data-label="Deadline">
            ${approval ? `${rule.timeout_minutes ?? DEFAULT_TIMEOUT_MINUTES} min` : none}
          </td>
          <td>
            <div class="row">
              <a href="/app/admin/rules/edit?rule=${encodeURIComponent(rule.name)}"
                >Edit<span class="visually-hidden"> ${rule.name}</span></a
              >
              <form method="post" action="/app/admin/rules/delete">
                ${configFields(session, version)}
                <input type="hidden" name="rule" value="${rule.name}" />
                <button type="submit" class="link">
                  Delete<span class="visually-hidden"> ${rule.name}</span>…
                </button>
              </form>
            </div>
          </td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

function classifyButtons(session: AppSession, version: number, tool: Tool): Html {
  return html`<form method="post" action="/app/admin/rules/classify" class="row">
    ${configFields(session, version)}
    <input type="hidden" name="connection" value="${tool.connection}" />
    <input type="hidden" name="tool" value="${tool.name}" />
    <button type="submit" name="classification" value="allow" class="approve" aria-label="Allow ${tool.name}">
      Allow
    </button>
    <button type="submit" name="classification" value="approval" aria-label="Needs approval: ${tool.name}">
      Needs approval
    </button>
    <button type="submit" name="classification" value="deny" class="reject" aria-label="Deny ${tool.name}">
      Deny
    </button>
    <a
      href="/app/admin/rules/new?${new URLSearchParams({ connection: tool.connection, tool: tool.name }).toString()}"
      >or write a rule<span class="visually-hidden"> for ${tool.name}</span></a
    >
  </form>`;
}

const byConnection = (tools: Tool[]) => {
  const groups = new Map<string, Tool[]>();
  for (const tool of tools) groups.set(tool.connection, [...(groups.get(tool.connection) ?? []), tool]);
  return [...groups];
};

/** Tools called but never classified, with one-click classification. */
function toClassify(session: AppSession, version: number, tools: Tool[]): Html | null {
  const fresh = tools.filter((tool) => tool.classification === 'new');
  if (fresh.length === 0) return null;
  return html`<section class="card" aria-labelledby="to-classify" id="classify">
    <h2 id="to-classify">Tools to classify first <span class="badge">${fresh.length}</span></h2>
    <p class="muted">
      These tools were called but nobody has classified them: every call of them waits for an admin until they
      are. Allow them, make every call need approval, or deny them; rules can still ask for more.
    </p>
    ${byConnection(fresh).map(
      ([connection, list]) =>
        html`<h3>${connection === 'SDK' ? 'SDK (Hold API)' : connection}</h3>
          <table class="responsive">
            <tbody>
              ${list.map(
                (tool) =>
                  html`<tr>
                    <td>
                      <code>${tool.name}</code><br /><span class="muted"
                        >first seen ${time(tool.firstSeenAt)}</span
                      >
                    </td>
                    <td>${classifyButtons(session, version, tool)}</td>
                  </tr>`,
              )}
            </tbody>
          </table>`,
    )}
  </section>`;
}

/** Every tool seen or classified, per connection, with its classification (changeable). */
function allTools(session: AppSession, version: number, tools: Tool[]): Html {
  return html`<h2 id="tools">Tools</h2>
    <p class="muted">
      A tool's classification acts as a rule that matches every call of it. A tool nobody has classified is
      <em>new</em> and needs an admin's approval.
    </p>
    ${
      tools.length === 0
        ? html`<p class="empty card">No tool has been called or classified yet.</p>`
        : byConnection(tools).map(
            ([connection, list]) =>
              html`<section class="card">
                <h3>${connection === 'SDK' ? 'SDK (Hold API)' : connection}</h3>
                <table class="responsive">
                  <thead>
                    <tr>
                      <th>Tool</th>
                      <th>Classification</th>
                      <th>Change</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${list.map(
                      (tool) =>
                        html`<tr>
                          <td><code>${tool.name}</code></td>
                          <td>
                            ${tool.classification === 'new' ? html`<span class="status">new</span>` : effectBadge(tool.classification)}
                          </td>
                          <td>
                            <form method="post" action="/app/admin/rules/classify" class="row">
                              ${configFields(session, version)}
                              <input type="hidden" name="connection" value="${tool.connection}" />
                              <input type="hidden" name="tool" value="${tool.name}" />
                              <select
                                name="classification"
                                aria-label="Classification of ${tool.name}"
                                class="auto"
                              >
                                ${when(tool.classification === 'new', () => html`<option value="" selected>choose…</option>`)}
                                ${CLASSIFICATIONS.map((c) => html`<option value="${c}" ${selected(tool.classification === c)}>${c}</option>`)}
                              </select>
                              <button type="submit" class="secondary">Set</button>
                            </form>
                          </td>
                        </tr>`,
                    )}
                  </tbody>
                </table>
              </section>`,
          )
    }
    <details class="card">
      <summary>Classify a tool before its first call</summary>
      <form method="post" action="/app/admin/rules/classify" class="filters">
        ${configFields(session, version)}
        <div>
          <label for="pre-connection">Connection</label>
          <input id="pre-connection" name="connection" type="text" value="SDK" required maxlength="200" />
        </div>
        <div>
          <label for="pre-tool">Tool name</label>
          <input id="pre-tool" name="tool" type="text" required maxlength="200" spellcheck="false" />
        </div>
        <div>
          <label for="pre-class">Classification</label>
          <select id="pre-class" name="classification">
            ${CLASSIFICATIONS.map((c) => html`<option value="${c}">${c}</option>`)}
          </select>
        </div>
        <div><button type="submit">Classify</button></div>
      </form>
    </details>`;
}

export function rulePages(app: FastifyInstance, { ctx }: PageDeps) {
  /** Before a new tool is allowed: what that means, and whether to approve the calls of it that wait. */
  async function confirmAllow(
    session: AppSession,
    tool: { connection: string; name: string },
    waiting: number,
    version: number | undefined,
  ) {
    const body = html`<h1>Allow ${tool.name}?</h1>
      <form method="post" action="/app/admin/rules/classify" class="card">
        ${configFields(session, version)}
        <input type="hidden" name="connection" value="${tool.connection}" />
        <input type="hidden" name="tool" value="${tool.name}" />
        <input type="hidden" name="classification" value="allow" />
        <input type="hidden" name="confirmed" value="yes" />
        <p>
          Every call of <code>${tool.name}</code> on <strong>${tool.connection}</strong> will then run at
          once, without anyone seeing it, unless a rule holds or denies it.
        </p>
        ${when(
          waiting > 0,
          () =>
            html`<p>
              <input type="checkbox" id="approve-waiting" name="approve_waiting" value="yes" />
              <label for="approve-waiting"
                >Also approve the ${waiting} ${waiting === 1 ? 'call' : 'calls'} of it waiting now, as you
                (holds that need more approvers keep waiting for them)</label
              >
            </p>`,
        )}
        <div class="buttons">
          <button type="submit" class="approve">Allow ${tool.name}</button>
          <a href="/app/admin/rules">Cancel</a>
        </div>
      </form>`;
    return adminPage(ctx, session, { title: `Allow ${tool.name}?`, active: 'rules' }, body);
  }

  const overview = async (
    session: AppSession,
    options: { notice?: string | null; problems?: string[] } = {},
  ) => {
    const config = await currentConfig(ctx, session);
    const tools = await toolsOf(ctx, session.workspace.id);
    const body = html`<div class="heading">
        <h1>Rules</h1>
        <a class="button" href="/app/admin/rules/new">New rule</a>
      </div>
      ${issueSummary(options.problems ?? [])} ${toClassify(session, config.version, tools)}
      <h2 id="rules">Rules in force <span class="badge">${config.rules?.length ?? 0}</span></h2>
      <p class="muted">
        Every rule that matches a call is considered: deny beats approval beats allow; among approval rules
        the one with the most approvals required, then the shortest deadline. The order of the rules does not
        matter. See <a href="/docs/rules">the rule language</a>.
      </p>
      ${ruleTable(session, config.version, config.rules ?? [])} ${allTools(session, config.version, tools)}`;
    return adminPage(ctx, session, { title: 'Rules', active: 'rules', notice: options.notice }, body);
  };

  const formPage = async (
    session: AppSession,
    values: RuleValues,
    options: {
      errors?: Record<string, string>;
      problems?: string[];
      report?: SimulationReport;
      status?: number;
    } = {},
  ) => {
    const config = await currentConfig(ctx, session);
    const context = formContext(await toolsOf(ctx, session.workspace.id), config);
    const errors = options.errors ?? {};
    const summary = [
      ...Object.entries(errors).map(([key, message]) => `${labelOf(key)}: ${message}`),
      ...(options.problems ?? []),
    ];
    const title = values.original ? `Edit rule “${values.original}”` : 'New rule';
    const body = html`<p><a href="/app/admin/rules">← Rules</a></p>
      <h1>${title}</h1>
      ${issueSummary(summary)} ${when(options.report, () => previewReport(session, values, options.report!))}
      ${ruleForm(session, values, errors, context)}`;
    return adminPage(ctx, session, { title, active: 'rules' }, body);
  };

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/app/admin/rules',
    ADMIN,
    async (request, reply) => {
      const notice = NOTICES[request.query.notice ?? ''] ?? null;
      const counts = ['approved', 'others', 'left'].map((name) => Number(request.query[name] ?? 0));
      if (notice && counts.every((n) => Number.isSafeInteger(n) && n >= 0) && counts.some((n) => n > 0)) {
        const [approved, others, left] = counts as [number, number, number];
        const parts = [
          `${approved} waiting ${approved === 1 ? 'hold' : 'holds'} approved`,
          ...(others ? [`${others} now wait for their other approvers`] : []),
          ...(left ? [`${left} left as they were (not yours to decide, or decided meanwhile)`] : []),
        ];
        return sendPage(
          reply,
          await overview(request.appSession!, { notice: `${notice} ${parts.join('; ')}.` }),
        );
      }
      return sendPage(reply, await overview(request.appSession!, { notice }));
    },
  );

  app.get<{ Querystring: { tool?: string; connection?: string } }>(
    '/app/admin/rules/new',
    ADMIN,
    async (request, reply) => {
      const values = {
        ...blankRule,
        version: await currentConfigVersion(ctx, request.appSession!.workspace),
        tool: (request.query.tool ?? '').slice(0, 200),
        connection: (request.query.connection ?? '').slice(0, 200),
      };
      return sendPage(reply, await formPage(request.appSession!, values));
    },
  );

  app.get<{ Querystring: { rule?: string } }>('/app/admin/rules/edit', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const config = await currentConfig(ctx, session);
    const rule = config.rules?.find((r) => r.name === request.query.rule);
    if (!rule)
      return problemPage(reply, 404, 'Not found', 'No rule of that name in this workspace.', session);
    return sendPage(reply, await formPage(session, valuesOfRule(rule, config.version)));
  });

  app.post<{ Body: Form }>('/app/admin/rules/save', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const values = valuesOfForm(request.body);
    const preview = field(request.body, 'action') === 'preview';
    const current = await currentConfig(ctx, session);
    const rules = [...(current.rules ?? [])];
    const { rule, errors, rowOf } = ruleOfValues(values);
    let index = rules.length;
    if (values.original) {
      index = rules.findIndex((r) => r.name === values.original);
      if (index < 0) {
        return sendPage(
          reply,
          await formPage(
            session,
            { ...values, original: '' },
            {
              problems: [
                `The rule “${values.original}” was deleted or renamed meanwhile. Saving now adds this rule as a new one.`,
              ],
            },
          ),
          409,
        );
      }
    }
    rules[index] = keepUnshown(rules[index], rule);
    const draft: WorkspaceConfig = { rules };

    const problems: string[] = [];
    const take = (issues: FieldIssue[]) => {
      for (const issue of issues) {
        const [part, at, ...rest] = issue.field.split('.');
        const key = part === 'rules' && Number(at) === index ? formKey(rest, rowOf) : null;
        if (key) errors[key] ??= issue.message;
        else if (part === 'rules' && Number(at) === index) problems.push(issue.message);
        else problems.push(describeIssue(issue, draft));
      }
    };
    const checked = checkConfig(draft);
    if ('issues' in checked) take(checked.issues);
    // Checked against the workspace too (approvers who are members, unique names), so that every problem
    // of the form is shown at once, not one round after another.
    const stored = {
      members: current.members ?? [],
      groups: new Map(Object.entries(current.groups ?? {})),
      rules: current.rules ?? [],
    };
    take(crossCheck('config' in checked ? checked.config : draft, stored, () => undefined));
    if (Object.keys(errors).length > 0 || problems.length > 0 || 'issues' in checked) {
      return sendPage(reply, await formPage(session, values, { errors, problems }), 422);
    }

    if (preview) {
      let report: SimulationReport;
      try {
        report = await simulatePolicy(
          ctx,
          session.workspace,
          { config: checked.config, lineOf: () => undefined },
          { sinceMs: PREVIEW_DAYS * 86_400_000 },
        );
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        take(error.issues.length > 0 ? error.issues : [{ field: '(change)', message: error.message }]);
        return sendPage(reply, await formPage(session, values, { errors, problems }), 422);
      }
      return sendPage(reply, await formPage(session, values, { report }));
    }

    // The same change to the rules as they are now: this one added or replaced, the rest kept.
    const issues = await applyChange(ctx, session, values.version, (now) => {
      const stored = [...(now.rules ?? [])];
      const found = stored.findIndex((r) => r.name === (values.original || rule.name));
      index = found >= 0 ? found : stored.length;
      stored[index] = keepUnshown(stored[index], rule);
      return { rules: stored };
    });
    if (issues) {
      take(issues);
      return sendPage(reply, await formPage(session, values, { errors, problems }), 422);
    }
    return reply.redirect('/app/admin/rules?notice=saved', 303);
  });

  app.post<{ Body: Form }>('/app/admin/rules/delete', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const name = field(request.body, 'rule');
    const current = await currentConfig(ctx, session);
    const rule = current.rules?.find((r) => r.name === name);
    if (!rule)
      return problemPage(reply, 404, 'Not found', 'No rule of that name in this workspace.', session);
    if (field(request.body, 'confirm') !== 'yes') {
      const body = confirmCard(session, {
        title: 'Delete this rule?',
        message: html`“${rule.name}” (${rule.effect} for <code>${rule.tool}</code>) stops deciding new holds
          at once. Holds it already decided keep their decision.`,
        action: '/app/admin/rules/delete',
        fields: { rule: rule.name, ...versionPassedOn(request.body) },
        button: 'Delete rule',
        back: '/app/admin/rules',
      });
      return sendPage(reply, await adminPage(ctx, session, { title: 'Delete rule', active: 'rules' }, body));
    }
    const rules = (current.rules ?? []).filter((r) => r.name !== name);
    const issues = await applyChange(ctx, session, readAtOf(request.body), (now) => ({
      rules: (now.rules ?? []).filter((r) => r.name !== name),
    }));
    if (issues) {
      const problems = issues.map((issue) => describeIssue(issue, { rules }));
      return sendPage(reply, await overview(session, { problems }), 422);
    }
    return reply.redirect('/app/admin/rules?notice=deleted', 303);
  });

  app.post<{ Body: Form }>('/app/admin/rules/classify', ADMIN, async (request, reply) => {
    const session = request.appSession!;
    const connection = field(request.body, 'connection');
    const tool = field(request.body, 'tool');
    const classification = field(request.body, 'classification');
    if (!(CLASSIFICATIONS as readonly string[]).includes(classification)) {
      return sendPage(reply, await overview(session, { problems: ['Choose allow, approval or deny.'] }), 422);
    }
    const named = { connection, name: tool };
    // Allowing a new tool lets its next calls through unseen: ask once, and offer its waiting calls.
    if (classification === 'allow' && field(request.body, 'confirmed') !== 'yes') {
      const { isNew, waiting } = await waitingHoldsOfTool(ctx, session.workspace.id, named);
      if (isNew) return sendPage(reply, await confirmAllow(session, named, waiting, readAtOf(request.body)));
    }
    const issues = await applyChange(ctx, session, readAtOf(request.body), () => ({
      tools: [{ connection, tool, classification: classification as (typeof CLASSIFICATIONS)[number] }],
    }));
    if (issues) {
      const label: Record<string, string> = {
        'tools.0.connection': 'Connection',
        'tools.0.tool': 'Tool name',
      };
      const problems = issues.map((issue) => `${label[issue.field] ?? issue.field}: ${issue.message}`);
      return sendPage(reply, await overview(session, { problems }), 422);
    }
    if (classification === 'allow' && field(request.body, 'approve_waiting') === 'yes') {
      const counts = await approveWaitingHolds(ctx, {
        workspaceId: session.workspace.id,
        memberId: session.member.id,
        tool: named,
      });
      const query = new URLSearchParams({
        notice: 'classified',
        approved: String(counts.approved),
        others: String(counts.awaitingOthers),
        left: String(counts.left),
      });
      return reply.redirect(`/app/admin/rules?${query.toString()}`, 303);
    }
    return reply.redirect('/app/admin/rules?notice=classified', 303);
  });
}
