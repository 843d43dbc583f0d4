import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answersRepeat } from './repeat-window.ts';

const MINUTE = 60_000;
const base = { createdAt: 0, decidedAt: null, execution: null, channel: null } as const;

test('an open hold answers every repeat, however late', () => {
  assert.equal(answersRepeat({ ...base, status: 'pending' }, 5, 10_000 * MINUTE), true);
  // Approved and not yet carried out: the call runs once, the repeat waits on that run.
  assert.equal(answersRepeat({ ...base, status: 'approved', decidedAt: 0 }, 5, 10_000 * MINUTE), true);
});

test('a carried-out call answers repeats within the window from its completion, and not after', () => {
  const executed = {
    ...base,
    status: 'executed' as const,
    decidedAt: MINUTE,
    execution: { status: 'executed' as const, startedAt: MINUTE, completedAt: 2 * MINUTE, outcome: {} },
  };
  assert.equal(answersRepeat(executed, 5, 2 * MINUTE + 5 * MINUTE - 1), true);
  assert.equal(answersRepeat(executed, 5, 2 * MINUTE + 5 * MINUTE), false);
  assert.equal(answersRepeat(executed, 0, 2 * MINUTE), false, 'a window of 0: every repeat is new');
});

test('a rejection answers repeats within the window from the decision; a withdrawal never', () => {
  const rejected = { ...base, status: 'rejected' as const, decidedAt: 3 * MINUTE, channel: 'inbox' as const };
  assert.equal(answersRepeat(rejected, 10, 12 * MINUTE), true);
  assert.equal(answersRepeat(rejected, 10, 13 * MINUTE), false);
  assert.equal(answersRepeat({ ...rejected, channel: 'agent' }, 10, 3 * MINUTE), false);
  assert.equal(answersRepeat({ ...rejected, channel: 'rule' }, 10, 3 * MINUTE), true);
});

test('an expired hold, a failed call and an allowed call answer no repeat', () => {
  for (const status of ['expired', 'failed', 'auto_allowed'] as const)
    assert.equal(answersRepeat({ ...base, status, decidedAt: 0 }, 60, 0), false, status);
});
