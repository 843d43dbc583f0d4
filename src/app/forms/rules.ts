/**
 * The rule form (docs/rules.md). Read as typed first, so that a refused form comes back as it was sent;
 * then made into a rule, each problem on its field (`when.2.value`, `frequency.per`), the rows that
 * cannot be read left out so that the service can still check the rest at once. Pure: no I/O.
 */
import { z } from 'zod';
import { OPERATORS, type RuleDefinition } from '../../domain/rules.ts';
import type { Form } from '../respond.ts';
import { type FieldErrors, list, parseForm, text } from './form.ts';
import {
  blankFollowUps,
  draftFollowUps,
  type FollowUpValues,
  readFollowUps,
  valuesOfFollowUps,
} from './rule-follow-ups.ts';

export const PERIODS = ['minute', 'hour', 'day'] as const;
export const COUNTED_BY = ['tool', 'agent', 'tool_and_agent'] as const;
/** How a condition's value is typed: text as it is, numbers as numbers, anything else as JSON. */
export const VALUE_TYPES = ['text', 'number', 'json'] as const;
/** Condition rows read from a form: enough for the rules language's 50 conditions and empty rows. */
const MAX_ROWS = 60;
const WHOLE = /^\d{1,10}$/;
const NUMBER = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;
const ORDERING = ['gt', 'gte', 'lt', 'lte'];
const LISTS = ['in', 'not_in'];

export interface ConditionRow {
  arg: string;
  op: string;
  type: string;
  value: string;
}

/** The rule form as typed: strings, kept as they are so a refused form comes back unchanged. */
export interface RuleValues extends FollowUpValues {
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
  repeat_window_minutes: string;
}

export const blankRule: RuleValues = {
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
  repeat_window_minutes: '',
  ...blankFollowUps,
};

/** A field as typed, untrimmed: a pattern or a text may start or end with a space. */
const untrimmed = () =>
  z.preprocess((value) => {
    const last: unknown = [value].flat().at(-1);
    return typeof last === 'string' ? last : '';
  }, z.string());

const ruleFields = z.object({
  name: text(),
  connection: text(),
  tool: text(),
  agent: text(),
  freq_more_than: text(),
  freq_per: text(),
  freq_by: text().transform((by) => by || 'tool'),
  effect: text(),
  approvers: list(),
  approvals_required: text(),
  timeout_minutes: text(),
  reason: text(),
  repeat_window_minutes: text(),
});

const conditionFields = z.object({
  arg: text(),
  op: text().transform((op) => op || 'eq'),
  type: text().transform((type) => type || 'text'),
  value: untrimmed(),
});

/** Reads the posted form; empty condition rows are dropped, so row numbers are those shown again. */
export function readRuleForm(form: Form | undefined): RuleValues {
  const parsed = parseForm(ruleFields, form);
  // Every field reads as text: only a body that is no form at all (a JSON list) fails, read as empty.
  const typed = parsed.ok ? parsed.value : ruleFields.parse({});
  const conditions: ConditionRow[] = [];
  for (let row = 0; row < MAX_ROWS; row++) {
    const [arg, value] = [form?.[`cond_arg_${row}`], form?.[`cond_value_${row}`]];
    if (arg === undefined && value === undefined) continue;
    const condition = conditionFields.parse({
      arg,
      op: form?.[`cond_op_${row}`],
      type: form?.[`cond_type_${row}`],
      value,
    });
    if (condition.arg || condition.value) conditions.push(condition);
  }
  const { freq_more_than, freq_per, freq_by, ...rest } = typed;
  const followUps = readFollowUps(form);
  return { ...rest, conditions, more_than: freq_more_than, per: freq_per, by: freq_by, ...followUps };
}

/** A stored rule as the form shows it. */
export const valuesOfRule = (rule: RuleDefinition): RuleValues => ({
  name: rule.name,
  connection: rule.connection ?? '',
  tool: rule.tool,
  agent: rule.agent ?? '',
  conditions: (rule.when ?? []).map((c) => ({ arg: c.arg, op: c.op, ...typedValue(c.value, c.op) })),
  more_than: rule.frequency ? String(rule.frequency.more_than) : '',
  per: rule.frequency?.per ?? '',
  by: rule.frequency?.by ?? 'tool',
  effect: rule.effect,
  approvers: rule.approvers ?? [],
  approvals_required: rule.approvals_required === undefined ? '' : String(rule.approvals_required),
  timeout_minutes: rule.timeout_minutes === undefined ? '' : String(rule.timeout_minutes),
  reason: rule.reason ?? '',
  repeat_window_minutes: rule.repeat_window_minutes === undefined ? '' : String(rule.repeat_window_minutes),
  ...valuesOfFollowUps(rule),
});

/**
 * A stored value as the form shows it: text and numbers (for `in`/`not_in`, lists of either,
 * comma-separated) as typed, anything else as JSON: whatever would read back as another value.
 */
function typedValue(value: unknown, op: string): Pick<ConditionRow, 'type' | 'value'> {
  if (value === undefined) return { type: 'text', value: '' };
  const json = { type: 'json', value: JSON.stringify(value) };
  // An empty text reads back as no value, and a number as text is refused where it is ordered.
  if (typeof value === 'string')
    return value === '' || (ORDERING.includes(op) && NUMBER.test(value.trim()))
      ? json
      : { type: 'text', value };
  if (typeof value === 'number') return { type: 'number', value: String(value) };
  if (!Array.isArray(value) || !LISTS.includes(op) || value.length === 0) return json;
  if (value.every((item) => typeof item === 'number')) return { type: 'number', value: value.join(', ') };
  // Only items that survive the split on commas and the trim of each item come back as text.
  const asText = (item: unknown) =>
    typeof item === 'string' && item !== '' && item === item.trim() && !item.includes(',');
  return value.every(asText) ? { type: 'text', value: value.join(', ') } : json;
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
  const items = list ? row.value.split(',').map((item) => item.trim()) : [row.value];
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

const condition = z
  .object({ arg: z.string(), op: z.string(), type: z.string(), value: z.string() })
  .transform((row, ctx) => {
    const problem = (field: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [field], message, input: row });
    if (!row.arg) problem('arg', 'Name the argument, like amount or customer.country.');
    const op = OPERATORS.find((known) => known === row.op);
    if (!op) problem('op', 'Choose an operator.');
    const parsed = parseValue(row);
    if ('error' in parsed) problem('value', parsed.error);
    const value = 'value' in parsed ? parsed.value : undefined;
    return { arg: row.arg, op: op!, ...(value !== undefined && { value }) };
  });

const frequency = z.object({
  more_than: z.string().regex(WHOLE, 'Give a whole number, 0 or more.').transform(Number),
  per: z.enum(PERIODS, 'Choose minute, hour or day.'),
  by: z.enum(COUNTED_BY, 'Choose what to count.'),
});

const wholeOrEmpty = (message: string) =>
  z.union(
    [z.literal('').transform(() => undefined), z.string().regex(WHOLE, message).transform(Number)],
    message,
  );

const approvalsRequired = z.object({ approvals_required: wholeOrEmpty('Give a whole number from 1 to 20.') });
const timeout = z.object({ timeout_minutes: wholeOrEmpty('Give a whole number of minutes, 1 or more.') });
const repeatWindow = z.object({
  repeat_window_minutes: wholeOrEmpty('Give a whole number of minutes from 0 to 1440.'),
});

/** Parses one part of the form; its problems go to `errors` under `at`. */
function parsePart<S extends z.ZodType>(schema: S, input: Form, at: string, errors: FieldErrors) {
  const parsed = parseForm(schema, input);
  if (parsed.ok) return parsed.value;
  for (const [field, message] of Object.entries(parsed.errors)) errors[`${at}${field}`] ??= message;
  return undefined;
}

export interface RuleDraft {
  /** The rule as far as the form could be read; the service checks it for the rest. */
  rule: RuleDefinition;
  /** Problems by form field: `name`, `when.2.value` (the row as shown), `frequency.per`. */
  errors: FieldErrors;
  /** The form row of each condition of `rule.when`. */
  rowOf: number[];
}

/** The draft rule of a form, and the problems found before the service sees it. */
export function draftRule(values: RuleValues): RuleDraft {
  const errors: FieldErrors = {};
  const when: NonNullable<RuleDefinition['when']> = [];
  const rowOf: number[] = [];
  values.conditions.forEach((row, index) => {
    const parsed = parsePart(condition, { ...row }, `when.${index}.`, errors);
    if (!parsed) return;
    when.push(parsed);
    rowOf.push(index);
  });
  const { more_than, per, by } = values;
  // An empty frequency is none; the number of approvals is an approval rule's only.
  const counted =
    more_than || per ? parsePart(frequency, { more_than, per, by }, 'frequency.', errors) : undefined;
  const approval = values.effect === 'approval';
  const { approvals_required } = approval
    ? (parsePart(approvalsRequired, { approvals_required: values.approvals_required }, '', errors) ?? {})
    : {};
  const { timeout_minutes } =
    parsePart(timeout, { timeout_minutes: values.timeout_minutes }, '', errors) ?? {};
  const { repeat_window_minutes } =
    parsePart(repeatWindow, { repeat_window_minutes: values.repeat_window_minutes }, '', errors) ?? {};
  const rule: RuleDefinition = {
    name: values.name,
    ...(values.connection !== '' && { connection: values.connection }),
    tool: values.tool,
    ...(values.agent !== '' && { agent: values.agent }),
    ...(when.length > 0 && { when }),
    ...(counted && { frequency: counted }),
    effect: values.effect as RuleDefinition['effect'],
    ...(approval && values.approvers.length > 0 && { approvers: values.approvers }),
    ...(approvals_required !== undefined && { approvals_required }),
    ...(timeout_minutes !== undefined && { timeout_minutes }),
    ...(values.reason !== '' && { reason: values.reason }),
    ...(repeat_window_minutes !== undefined && { repeat_window_minutes }),
    ...draftFollowUps(values, approval, errors),
  };
  return { rule, errors, rowOf };
}
