import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applyDecision, type Hold, holdRecord, isApprover } from './hold.ts';

const pending: Hold = {
  id: 'svc_pa_x',
  workspaceId: 'org_1',
  environment: 'live',
  connection: 'SDK',
  toolName: 'pay',
  agentId: 'a',
  agentLabel: null,
  requestedFor: null,
  arguments: {},
  changedArguments: null,
  context: {},
  idempotencyKey: 'k',
  fingerprint: 'f',
  submitStatus: 'pending',
  status: 'pending',
  ruleName: 'r',
  approvers: ['role:admin'],
  approvalsRequired: 2,
  approvalsReceived: 0,
  createdAt: 0,
  expiresAt: 60_000,
  verdict: null,
  reason: null,
  channel: null,
  decidedAt: null,
  mcpServerId: null,
  callKey: null,
  execution: null,
};

test('four-eyes: the hold is approved only with the last required approval', () => {
  const once = applyDecision(pending, { verdict: 'approve', comment: null, channel: 'inbox', at: 1 });
  assert.equal(once.status, 'pending');
  assert.equal(once.approvalsReceived, 1);
  assert.equal(holdRecord(once).decision, null);
  const twice = applyDecision(once, { verdict: 'approve', comment: 'ok', channel: 'email', at: 2 });
  assert.equal(twice.status, 'approved');
  assert.deepEqual(holdRecord(twice).decision, {
    verdict: 'approve',
    reason: 'ok',
    channel: 'email',
    decided_at: new Date(2).toISOString(),
  });
  assert.equal(holdRecord(twice).arguments_changed, false);
});

test('an approval with changes restarts the count and carries the changed arguments', () => {
  const two = { ...pending, approvalsRequired: 2 };
  const once = applyDecision(two, { verdict: 'approve', comment: null, channel: 'inbox', at: 1 });
  const edited = applyDecision(once, {
    verdict: 'approve',
    comment: null,
    channel: 'inbox',
    at: 2,
    changedArguments: { amount: 1 },
  });
  assert.deepEqual([edited.status, edited.approvalsReceived], ['pending', 1]);
  const done = applyDecision(edited, { verdict: 'approve', comment: null, channel: 'email', at: 3 });
  assert.equal(done.status, 'approved');
  assert.deepEqual(done.changedArguments, { amount: 1 });
  assert.equal(holdRecord(done).arguments_changed, true);
  assert.deepEqual(holdRecord(done).decision?.changed_arguments, { amount: 1 });
});

test('any rejection is final at once', () => {
  const once = applyDecision(pending, { verdict: 'approve', comment: null, channel: 'inbox', at: 1 });
  const rejected = applyDecision(once, { verdict: 'reject', comment: 'no', channel: 'slack', at: 2 });
  assert.equal(rejected.status, 'rejected');
  assert.equal(rejected.reason, 'no');
});

test('approvers: roles, e-mails and groups; viewers never', () => {
  assert.ok(isApprover(['role:admin'], { email: 'a@x.test', role: 'admin' }));
  assert.ok(!isApprover(['role:admin'], { email: 'a@x.test', role: 'approver' }));
  assert.ok(isApprover(['A@X.test'], { email: 'a@x.test', role: 'approver' }));
  assert.ok(isApprover(['group:finance'], { email: 'a@x.test', role: 'approver' }, ['finance']));
  assert.ok(!isApprover(['a@x.test'], { email: 'a@x.test', role: 'viewer' }));
});
