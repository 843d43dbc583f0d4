import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dueFollowUps, durationMs, durationText, followUpPlan, nextFollowUpAt } from './follow-ups.ts';

const MIN = 60_000;
const hold = { createdAt: 0, expiresAt: 60 * MIN };

test('durations: minutes, hours, days; anything else is refused', () => {
  assert.equal(durationMs('30m'), 30 * MIN);
  assert.equal(durationMs('2h'), 120 * MIN);
  assert.equal(durationMs('1d'), 1440 * MIN);
  for (const bad of ['0m', '5', '5s', '1.5h', '-1m', ' 5m']) assert.throws(() => durationMs(bad), bad);
  assert.equal(durationText(25 * MIN), '25 min');
  assert.equal(durationText(90 * MIN), '1 h 30 min');
  assert.equal(durationText(50 * 60 * MIN), '2 d 2 h');
});

test('reminders before the deadline come in order, each once', () => {
  const plan = followUpPlan({ before: ['30m', '5m'] }, [])!;
  let state = { escalationsDone: 0, remindedAt: null as number | null };
  assert.equal(nextFollowUpAt(plan, hold, state), 30 * MIN);
  assert.deepEqual(dueFollowUps(plan, hold, state, 29 * MIN), { steps: [], remind: false });
  assert.deepEqual(dueFollowUps(plan, hold, state, 30 * MIN), { steps: [], remind: true });
  state = { ...state, remindedAt: 30 * MIN };
  assert.equal(nextFollowUpAt(plan, hold, state), 55 * MIN);
  state = { ...state, remindedAt: 55 * MIN };
  assert.equal(nextFollowUpAt(plan, hold, state), null);
});

test('a reminder time before the submission or after the deadline is never due', () => {
  const plan = followUpPlan({ before: ['2h', '90m'] }, [])!;
  assert.equal(nextFollowUpAt(plan, hold, { escalationsDone: 0, remindedAt: null }), null);
});

test('every: from the submission, up to the deadline; a late worker sends one for the times it missed', () => {
  const plan = followUpPlan({ every: '20m' }, [])!;
  const state = { escalationsDone: 0, remindedAt: null };
  assert.equal(nextFollowUpAt(plan, hold, state), 20 * MIN);
  assert.equal(dueFollowUps(plan, hold, state, 45 * MIN).remind, true);
  // Acting at 45 min: the next time is 60 min, the deadline itself: none.
  assert.equal(nextFollowUpAt(plan, hold, { escalationsDone: 0, remindedAt: 45 * MIN }), null);
});

test('escalation steps are due in order, after their time from submission', () => {
  const plan = followUpPlan(null, [
    { after: '15m', to: ['group:oncall'] },
    { after: '30m', to: ['role:admin'] },
  ])!;
  assert.equal(nextFollowUpAt(plan, hold, { escalationsDone: 0, remindedAt: null }), 15 * MIN);
  assert.deepEqual(
    dueFollowUps(plan, hold, { escalationsDone: 0, remindedAt: null }, 31 * MIN).steps,
    [0, 1],
  );
  assert.deepEqual(dueFollowUps(plan, hold, { escalationsDone: 1, remindedAt: null }, 20 * MIN).steps, []);
  assert.equal(nextFollowUpAt(plan, hold, { escalationsDone: 2, remindedAt: null }), null);
});

test('no plan without reminders or steps', () => {
  assert.equal(followUpPlan(null, null), null);
  assert.equal(followUpPlan({ before: [] }, []), null);
});
