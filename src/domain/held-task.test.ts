import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envelopeOf } from './envelope.ts';
import { heldTask } from './held-task.ts';
import { applyDecision, expireHold, type Hold, holdRecord, withdrawHold } from './hold.ts';

const pending: Hold = {
  id: 'svc_pa_x',
  workspaceId: 'org_1',
  environment: 'live',
  connection: 'Files',
  toolName: 'pay',
  agentId: 'a',
  agentLabel: null,
  requestedFor: null,
  arguments: { amount: 5 },
  changedArguments: null,
  context: {},
  idempotencyKey: 'k',
  fingerprint: 'f',
  submitStatus: 'pending',
  status: 'pending',
  ruleName: 'r',
  approvers: ['group:finance'],
  approvalsRequired: 2,
  approvalsReceived: 1,
  createdAt: 0,
  expiresAt: Date.UTC(2026, 10, 24, 13, 0),
  verdict: null,
  reason: null,
  channel: null,
  decidedAt: null,
  mcpServerId: 'mcp_1',
  callKey: 'c',
  execution: null,
};
const answer = { content: [{ type: 'text', text: 'the envelope' }], isError: true };
const task = (hold: Hold) => heldTask(hold, answer, 'https://x/a/svc_pa_x');

test('a waiting hold is a working task that names its approvers, its four-eyes state and its deadline', () => {
  const working = task(pending);
  assert.equal(working.status, 'working');
  assert.equal(
    working.statusMessage,
    'Held for human approval: 1 of 2 approvals, waiting for finance until 2026-11-24 13:00 UTC',
  );
  assert.equal(working.taskId, pending.id);
});

test('each outcome of a hold as a task: completed, failed (with an unknown outcome said), cancelled', () => {
  const approved = applyDecision(pending, { verdict: 'approve', comment: null, channel: 'inbox', at: 5 });
  assert.equal(task(approved).status, 'working', 'approved, not yet run');
  const outcome = { content: [{ type: 'text', text: 'paid' }] };
  const executed: Hold = {
    ...approved,
    status: 'executed',
    execution: { status: 'executed', startedAt: 6, completedAt: 7, outcome },
  };
  assert.deepEqual(task(executed).result, outcome, "the upstream's own result");
  assert.equal(task(executed).lastUpdatedAt, new Date(7).toISOString());
  const unknown: Hold = {
    ...approved,
    status: 'failed',
    execution: {
      status: 'failed',
      startedAt: 6,
      completedAt: 7,
      outcome: { code: -32001, message: 'Request timed out', outcome: 'unknown' },
    },
  };
  assert.deepEqual(task(unknown).error, {
    code: -32001,
    message: 'Request timed out',
    data: { outcome: 'unknown' },
  });
  const rejected = applyDecision(pending, { verdict: 'reject', comment: 'no', channel: 'inbox', at: 5 });
  assert.deepEqual([task(rejected).status, task(rejected).result], ['failed', answer], 'not carried out');
  assert.deepEqual([task(expireHold(pending)).status, task(expireHold(pending)).result], ['failed', answer]);
  assert.equal(task(rejected).error, undefined, 'the error result, not a JSON-RPC error');
  assert.equal(task(withdrawHold(pending, 5)).status, 'cancelled');
});

test('an allowed call is a working task until its result is recorded, then completed or failed', () => {
  const allowed: Hold = {
    ...pending,
    status: 'auto_allowed',
    execution: { status: 'running', startedAt: 1, completedAt: null, outcome: null },
  };
  assert.equal(task(allowed).status, 'working');
  const outcome = { content: [{ type: 'text', text: 'noted' }] };
  const executed = {
    ...allowed,
    execution: { status: 'executed' as const, startedAt: 1, completedAt: 2, outcome },
  };
  assert.deepEqual([task(executed).status, task(executed).result], ['completed', outcome]);
  const failure = { code: -32000, message: 'The upstream MCP server cannot be reached' };
  const failed = {
    ...allowed,
    execution: { status: 'failed' as const, startedAt: 1, completedAt: 2, outcome: failure },
  };
  assert.deepEqual([task(failed).status, task(failed).error], ['failed', failure]);
});

test('a withdrawn hold: rejected on the agent channel; its envelope invites a new call, never "do not retry"', () => {
  const withdrawn = withdrawHold(pending, 5);
  assert.deepEqual(holdRecord(withdrawn).decision, {
    verdict: 'reject',
    reason: 'Withdrawn by the agent before a decision: its MCP client cancelled the task',
    channel: 'agent',
    decided_at: new Date(5).toISOString(),
  });
  const envelope = envelopeOf(withdrawn, 'https://x/a/svc_pa_x');
  assert.equal(envelope.status, 'denied');
  assert.deepEqual([envelope.retry, envelope.retryable, envelope.terminal], ['new_request', true, true]);
  assert.match(envelope.message, /was withdrawn before anyone decided/);
  assert.doesNotMatch(envelope.message, /Do not retry/);
});
