/**
 * The rule form's parser (rules.ts): what is typed comes back as typed, a stored rule reads back as
 * itself, each problem lands on its field, and the service's issues on the row they are about.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RuleDefinition } from '../../domain/rules.ts';
import type { FieldErrors } from './form.ts';
import {
  attachRuleIssues,
  blankRule,
  draftRule,
  keepUnshown,
  readRuleForm,
  type RuleValues,
  valuesOfRule,
} from './rules.ts';

const values = (changes: Partial<RuleValues>): RuleValues => ({
  ...blankRule,
  name: 'R',
  tool: 't',
  ...changes,
});

test('the form as posted: empty condition rows dropped, values untrimmed, defaults for op, type and count', () => {
  const read = readRuleForm({
    name: ' Big payments ',
    tool: 'pay.*',
    cond_arg_0: '',
    cond_value_0: '',
    cond_arg_1: 'memo',
    cond_op_1: 'matches',
    cond_type_1: 'text',
    cond_value_1: ' wire ',
    cond_arg_2: 'amount',
    cond_value_2: '5',
    approvers: ['role:admin', '', 'ann@acme.test'],
    freq_by: '',
  });
  assert.equal(read.name, 'Big payments');
  assert.deepEqual(read.conditions, [
    { arg: 'memo', op: 'matches', type: 'text', value: ' wire ' },
    { arg: 'amount', op: 'eq', type: 'text', value: '5' },
  ]);
  assert.deepEqual(read.approvers, ['role:admin', 'ann@acme.test']);
  assert.equal(read.by, 'tool');
  // A body that is no form at all reads as an empty one.
  assert.deepEqual(readRuleForm(['not a form'] as never), { ...blankRule, effect: '' });
});

test('every condition and field a person can write reads back as the stored rule', () => {
  const rules: RuleDefinition[] = [
    {
      name: 'Everything',
      connection: 'SDK',
      tool: 'pay.*',
      agent: 'billing-*',
      when: [
        { arg: 'amount', op: 'gt', value: 1000 },
        { arg: 'code', op: 'gte', value: '1000' },
        { arg: 'country', op: 'in', value: ['DE', 'FR'] },
        { arg: 'zip', op: 'not_in', value: ['10115', '80331'] },
        { arg: 'ids', op: 'in', value: [1, 2.5] },
        { arg: 'pair', op: 'in', value: ['a,b', 'c'] },
        { arg: 'memo', op: 'matches', value: ' ^x ' },
        { arg: 'tags', op: 'contains', value: 'urgent' },
        { arg: 'list', op: 'eq', value: ['a', 'b'] },
        { arg: 'blank', op: 'eq', value: '' },
        { arg: 'flag', op: 'eq', value: true },
        { arg: 'nothing', op: 'ne', value: null },
        { arg: 'object', op: 'eq', value: { a: 1 } },
        { arg: 'ticket', op: 'exists' },
        { arg: 'sudo', op: 'exists', value: false },
      ],
      frequency: { more_than: 3, per: 'hour', by: 'tool_and_agent' },
      effect: 'approval',
      approvers: ['role:admin', 'group:finance'],
      approvals_required: 2,
      timeout_minutes: 30,
    },
    { name: 'Deny', tool: 'x', effect: 'deny', reason: 'No.' },
    { name: 'Allow', tool: 'y', effect: 'allow' },
  ];
  for (const rule of rules) {
    const draft = draftRule(valuesOfRule(rule));
    assert.deepEqual(draft.errors, {}, rule.name);
    assert.deepEqual(draft.rule, rule);
  }
});

test('each problem on its field, the row as shown; rows that cannot be read are left out of the draft', () => {
  const draft = draftRule(
    values({
      conditions: [
        { arg: '', op: 'nope', type: 'json', value: 'EUR' },
        { arg: 'amount', op: 'gt', type: 'number', value: '10' },
        { arg: 'code', op: 'gt', type: 'text', value: '900' },
        { arg: 'n', op: 'in', type: 'number', value: '1, x' },
        { arg: 'ok', op: 'exists', type: 'text', value: 'yes' },
        { arg: 'v', op: 'eq', type: 'color', value: 'red' },
      ],
      more_than: 'lots',
      per: 'week',
      by: 'everyone',
      approvals_required: 'two',
      timeout_minutes: '-5',
    }),
  );
  assert.deepEqual(Object.keys(draft.errors).sort(), [
    'approvals_required',
    'frequency.by',
    'frequency.more_than',
    'frequency.per',
    'timeout_minutes',
    'when.0.arg',
    'when.0.op',
    'when.0.value',
    'when.2.value',
    'when.3.value',
    'when.4.value',
    'when.5.value',
  ]);
  assert.match(draft.errors['when.2.value']!, /^Is a number typed as text/);
  assert.match(draft.errors['when.3.value']!, /^Is not a number list/);
  assert.deepEqual(draft.rule.when, [{ arg: 'amount', op: 'gt', value: 10 }]);
  assert.deepEqual(draft.rowOf, [1]);
  assert.equal(draft.rule.frequency, undefined);
  // Approvers and their number are an approval rule's only: not read for another effect.
  const deny = draftRule(values({ effect: 'deny', approvers: ['role:admin'], approvals_required: 'x' }));
  assert.deepEqual(deny.errors, {});
  assert.deepEqual(deny.rule, { name: 'R', tool: 't', effect: 'deny' });
});

test("the service's issues about the edited rule land on the form's fields; the others come back", () => {
  const errors: FieldErrors = { name: 'Typed wrong.' };
  const issues = [
    { field: 'rules.2.when.0.value', message: 'must be a list for in' },
    { field: 'rules.2.approvers.1', message: 'is not a member of the workspace' },
    { field: 'rules.2.frequency', message: 'is wrong' },
    { field: 'rules.2.name', message: 'is used by another rule' },
    { field: 'rules.2.remind.before.0', message: 'must be shorter than timeout_minutes' },
    { field: 'rules.1.name', message: 'is used by another rule' },
    { field: 'members.0.email', message: 'is listed twice' },
  ];
  const rest = attachRuleIssues(issues, 2, [3], errors);
  assert.deepEqual(errors, {
    name: 'Typed wrong.',
    'when.3.value': 'must be a list for in',
    approvers: 'is not a member of the workspace',
    'frequency.more_than': 'is wrong',
  });
  assert.deepEqual(rest, issues.slice(4));
});

test('what the form does not show is kept from the stored rule, for an approval rule only', () => {
  const stored: RuleDefinition = {
    name: 'R',
    tool: 't',
    effect: 'approval',
    remind: { before: ['10m'] },
    escalate: [{ after: '15m', to: ['role:admin'] }],
    signed: false,
  };
  const edited: RuleDefinition = { name: 'R2', tool: 't', effect: 'approval', timeout_minutes: 60 };
  assert.deepEqual(keepUnshown(stored, edited), {
    ...edited,
    remind: { before: ['10m'] },
    escalate: [{ after: '15m', to: ['role:admin'] }],
    signed: false,
  });
  assert.deepEqual(keepUnshown(stored, { ...edited, effect: 'deny' }), { ...edited, effect: 'deny' });
  assert.deepEqual(keepUnshown(undefined, edited), edited);
});
