import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BULK_ACTION_LENGTH, bulkActionText, bulkApprovalSkip, bulkSkip, bulkTotals } from './bulk.ts';

const single = { approvalsRequired: 1 };
const fourEyes = { approvalsRequired: 2 };

test('bulk approval: allowed by default, not for four-eyes or signed rules, the rule may say otherwise', () => {
  assert.equal(bulkApprovalSkip(single, {}, false), null);
  assert.equal(bulkApprovalSkip(fourEyes, {}, false), 'four_eyes');
  assert.equal(bulkApprovalSkip(single, { signed: true }, false), 'signed');
  assert.equal(bulkApprovalSkip(single, { bulk: false }, false), 'not_in_bulk');
  assert.equal(bulkApprovalSkip(fourEyes, { bulk: true }, false), null, 'the rule lets four eyes in');
  // A signature is made one approval at a time, whatever the rule says; so is the workspace's.
  assert.equal(bulkApprovalSkip(single, { bulk: true, signed: true }, false), 'signed');
  assert.equal(bulkApprovalSkip(single, { bulk: true }, true), 'signed');
});

test('holds with no rule follow their own approvals required', () => {
  assert.equal(bulkApprovalSkip(single, undefined, false), null);
  assert.equal(bulkApprovalSkip(fourEyes, undefined, false), 'four_eyes');
  assert.equal(bulkApprovalSkip(single, undefined, true), 'signed');
});

test('bulk reject is always offered; the decision’s own refusals apply to both verdicts', () => {
  const hold = { toolName: 'pay', approvalsRequired: 2 };
  const base = {
    hold,
    args: { amount: 1 },
    rule: { signed: true },
    workspaceRequiresPasskey: true,
    memberId: 'm1',
    claim: undefined,
    frozen: false,
  };
  assert.equal(bulkSkip({ ...base, verdict: 'reject', blocker: null }), null);
  assert.equal(bulkSkip({ ...base, verdict: 'approve', blocker: null }), 'signed');
  for (const verdict of ['approve', 'reject'] as const) {
    assert.equal(bulkSkip({ ...base, verdict, blocker: 'own_request' }), 'own_request');
    assert.equal(bulkSkip({ ...base, verdict, blocker: 'closed' }), 'closed');
    assert.equal(bulkSkip({ ...base, verdict, blocker: 'viewer' }), 'not_an_approver');
  }
});

test('an action too long to show whole in the list is not approved in bulk, but may be rejected', () => {
  const hold = { toolName: 'pay', approvalsRequired: 1 };
  const base = {
    hold,
    rule: undefined,
    workspaceRequiresPasskey: false,
    blocker: null,
    memberId: 'm1',
    claim: undefined,
    frozen: false,
  };
  const memo = 'x'.repeat(BULK_ACTION_LENGTH);
  assert.equal(bulkSkip({ ...base, verdict: 'approve', args: { amount: 1 } }), null);
  assert.equal(bulkSkip({ ...base, verdict: 'approve', args: { amount: 1, memo } }), 'too_long');
  assert.equal(bulkSkip({ ...base, verdict: 'approve', args: null }), 'too_long', 'arguments not read');
  assert.equal(bulkSkip({ ...base, verdict: 'reject', args: { memo } }), null);
});

test('while the workspace is frozen nothing is approved in bulk; rejections go on', () => {
  const base = {
    hold: { approvalsRequired: 1 },
    args: { amount: 1 },
    rule: undefined,
    workspaceRequiresPasskey: false,
    blocker: null,
    memberId: 'm1',
    claim: undefined,
    frozen: true,
  };
  assert.equal(bulkSkip({ ...base, verdict: 'approve' }), 'frozen');
  assert.equal(bulkSkip({ ...base, verdict: 'reject' }), null);
  assert.equal(
    bulkSkip({ ...base, verdict: 'approve', blocker: 'closed' }),
    'closed',
    'its own refusal first',
  );
});

test('a hold another member has claimed is left out of both verdicts; the member’s own claim is not', () => {
  const hold = { toolName: 'pay', approvalsRequired: 1 };
  const base = {
    hold,
    args: { amount: 1 },
    rule: undefined,
    workspaceRequiresPasskey: false,
    memberId: 'm1',
    frozen: false,
  };
  for (const verdict of ['approve', 'reject'] as const) {
    assert.equal(bulkSkip({ ...base, verdict, blocker: null, claim: { memberId: 'm2' } }), 'claimed');
    assert.equal(bulkSkip({ ...base, verdict, blocker: null, claim: { memberId: 'm1' } }), null);
    assert.equal(bulkSkip({ ...base, verdict, blocker: 'closed', claim: { memberId: 'm2' } }), 'closed');
  }
});

test('a hold an approver changed is not approved in bulk (the list shows it as submitted); it may be rejected', () => {
  const base = {
    args: { amount: 1 },
    rule: undefined,
    workspaceRequiresPasskey: false,
    memberId: 'm1',
    frozen: false,
  };
  const hold = { approvalsRequired: 1, changedArguments: { amount: 2 } };
  const skip = (verdict: 'approve' | 'reject') =>
    bulkSkip({ ...base, hold, verdict, blocker: null, claim: undefined });
  assert.equal(skip('approve'), 'changed');
  assert.equal(skip('reject'), null);
});

test('the confirmation shows the values the rule looks at first, then money, then the rest', () => {
  const rule = { when: [{ arg: 'priority', op: 'eq' as const, value: 'high' }] };
  const args = { memo: 'rent', payee: 'Globex', amount: 1200, currency: 'EUR', priority: 'high' };
  assert.deepEqual(bulkActionText(args, rule), {
    text: 'priority="high", amount=1200, currency="EUR", payee="Globex", memo="rent"',
    complete: true,
  });
});

test('totals: the count, and amounts summed per currency without float noise', () => {
  const totals = bulkTotals([
    { amount: 0.1, currency: 'EUR' },
    { amount: 0.2, currency: 'EUR' },
    { amount: 1200, currency: 'USD' },
    { amount: 5, currency: 'CHF' },
    { amount: 1e-7, currency: 'CHF' },
    { amount: '12', currency: 'EUR' },
    { amount: 3 },
    { amount: Infinity, currency: 'EUR' },
    {},
    null,
  ]);
  assert.deepEqual(totals, {
    count: 10,
    amounts: [
      { currency: 'CHF', total: 5.0000001 },
      { currency: 'EUR', total: 0.3 },
      { currency: 'USD', total: 1200 },
    ],
    withoutAmount: 5,
  });
  assert.deepEqual(bulkTotals([]), { count: 0, amounts: [], withoutAmount: 0 });
});
