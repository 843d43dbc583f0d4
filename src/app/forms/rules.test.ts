/**
 * The rule form's parser (rules.ts): what is typed comes back as typed, a stored rule reads back as
 * itself, each problem lands on its field, and the service's issues on the row they are about.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RuleDefinition } from '../../domain/rules.ts';
import type { FieldErrors } from './form.ts';
import { attachRuleIssues } from './rule-issues.ts';
import { blankRule, draftRule, readRuleForm, type RuleValues, valuesOfRule } from './rules.ts';

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
      remind: { before: ['20m', '5m'], every: '10m' },
      escalate: [
        { after: '10m', to: ['group:oncall'] },
        { after: '15m', to: ['role:admin', 'ann@acme.test'] },
      ],
      signed: true,
      bulk: false,
      claim: { minutes: 20, halts_escalation: true },
    },
    {
      name: 'Said no',
      tool: 'z',
      effect: 'approval',
      signed: false,
      bulk: true,
      claim: { halts_escalation: false },
    },
    { name: 'Every only', tool: 'z', effect: 'approval', remind: { every: '1h' }, claim: { minutes: 1440 } },
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

test("the service's issues about the edited rule land on the form's fields, in words; the others come back", () => {
  const errors: FieldErrors = { name: 'Typed wrong.' };
  const issues = [
    { field: 'rules.2.when.0.value', message: 'must be a list for in' },
    { field: 'rules.2.approvers.1', message: 'is not a member of the workspace' },
    { field: 'rules.2.frequency', message: 'is wrong' },
    { field: 'rules.2.name', message: 'is used by another rule' },
    { field: 'rules.2.approvals_required', message: 'Too big: expected number to be <=20' },
    { field: 'rules.2.remind.before.1', message: 'must be shorter than timeout_minutes' },
    { field: 'rules.2.escalate.1.to.0', message: 'names no group of the workspace' },
    { field: 'rules.2.escalate.0.to', message: 'Too small: expected array to have >=1 items' },
    { field: 'rules.2.claim.minutes', message: 'Too big: expected number to be <=1440' },
    { field: 'rules.2.reason', message: 'Too big: expected string to have <=500 characters' },
    { field: 'rules.2', message: 'needs 2 distinct approvers' },
    { field: 'rules.1.name', message: 'is used by another rule' },
    { field: 'members.0.email', message: 'is listed twice' },
  ];
  const rest = attachRuleIssues(issues, 2, [3], errors);
  assert.deepEqual(errors, {
    name: 'Typed wrong.',
    'when.3.value': 'Must be a list for in.',
    approvers: 'Is not a member of the workspace.',
    'frequency.more_than': 'Is wrong.',
    approvals_required: 'Must be a whole number from 1 to 20.',
    'remind.before': 'Must be shorter than the deadline.',
    'escalate.1.to': 'Names no group of the workspace.',
    'escalate.0.to': 'Choose at least one approver to add.',
    'claim.minutes': 'Must be a whole number of minutes from 1 to 1440.',
    reason: 'Must be at most 500 characters.',
  });
  assert.deepEqual(rest, issues.slice(10));
  const named: FieldErrors = {};
  attachRuleIssues(
    [{ field: 'rules.0.name', message: 'Too small: expected string to have >=1 characters' }],
    0,
    [],
    named,
  );
  assert.deepEqual(named, { name: 'Name is required.' });
  const window: FieldErrors = {};
  attachRuleIssues(
    [
      {
        field: 'rules.0.repeat_window_minutes',
        message: 'an allow rule has no repeat_window_minutes: each allowed call runs',
      },
    ],
    0,
    [],
    window,
  );
  assert.deepEqual(window, {
    repeat_window_minutes: 'An allow rule has no repeat window: each allowed call runs.',
  });
});

test('reminders, escalation steps, signing, bulk, editable arguments and claim: read as posted, each problem on its field', () => {
  const read = readRuleForm({
    effect: 'approval',
    remind_before: ' 30m , 5m ',
    esc_after_0: '',
    esc_after_1: '15m',
    esc_to_1: ['group:oncall', 'role:admin'],
    esc_after_3: '1h',
    esc_to_3: 'ann@acme.test',
    signed: 'true',
    bulk: 'false',
    editable: ' amount , customer.memo ',
    claim_minutes: '45',
    claim_halts: '',
  });
  assert.deepEqual(read.steps, [
    { after: '15m', to: ['group:oncall', 'role:admin'] },
    { after: '1h', to: ['ann@acme.test'] },
  ]);
  const draft = draftRule({ ...read, name: 'R', tool: 't' });
  assert.deepEqual(draft.errors, {});
  assert.deepEqual(draft.rule, {
    name: 'R',
    tool: 't',
    effect: 'approval',
    remind: { before: ['30m', '5m'] },
    escalate: read.steps,
    signed: true,
    bulk: false,
    editable: ['amount', 'customer.memo'],
    claim: { minutes: 45 },
  });
  const wrong = draftRule(
    values({
      effect: 'approval',
      remind_before: '30m, soon',
      remind_every: '1 hour',
      steps: [{ after: 'later', to: [] }],
      signed: 'maybe',
      editable: 'amount, the memo',
      claim_minutes: '0',
    }),
  );
  assert.deepEqual(Object.keys(wrong.errors), [
    'remind.before',
    'remind.every',
    'escalate.0.after',
    'escalate.0.to',
    'claim.minutes',
    'editable',
    'signed',
  ]);
  assert.equal(
    draftRule(values({ effect: 'approval', editable: 'amount, amount' })).errors.editable,
    'Name each argument once.',
  );
  assert.equal(wrong.errors['claim.minutes'], 'Must be a whole number of minutes from 1 to 1440.');
  // Only an approval rule has them: another effect leaves them out.
  const deny = draftRule(
    values({ effect: 'deny', remind_every: '1h', steps: [{ after: '1h', to: ['x'] }], bulk: 'true' }),
  );
  assert.deepEqual(deny.rule, { name: 'R', tool: 't', effect: 'deny' });
});
