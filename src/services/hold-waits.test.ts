/** Open waits on a hold (`HoldEvents.onChange`): each ends once, by a change, its time, its own stop or shutdown. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HoldEvents, type WaitOutcome } from './hold-events.ts';

test('several waits on one hold: one stopped ends alone; a change wakes the others once; shutdown ends the rest', async () => {
  const events = new HoldEvents();
  const ended: string[] = [];
  const open = (name: string, holdId: string, timeoutMs = 60_000) =>
    events.onChange(holdId, timeoutMs, (outcome: WaitOutcome) => ended.push(`${name} ${outcome}`));
  open('a', 'pa_1');
  const stopB = open('b', 'pa_1');
  open('c', 'pa_1');
  open('d', 'pa_2');
  assert.equal(events.waiting, 4);

  stopB();
  stopB(); // a second stop changes nothing
  assert.deepEqual(ended, ['b closed']);
  assert.equal(events.waiting, 3);

  events.publish('pa_1', 'ws_1', { routine: true });
  events.publish('pa_1', 'ws_1', { routine: true }); // nobody waits on it any more
  assert.deepEqual(ended, ['b closed', 'a woken', 'c woken']);
  assert.equal(events.waiting, 1);

  const timed = new Promise<void>((resolve) => events.onChange('pa_3', 5, () => resolve()));
  await timed; // its time is up: woken, and gone from the waits
  assert.equal(events.waiting, 1);

  events.close();
  assert.deepEqual(ended.slice(3), ['d closed']);
  assert.equal(events.waiting, 0);
  events.onChange('pa_4', 60_000, (outcome) => ended.push(`e ${outcome}`));
  assert.deepEqual(ended.slice(4), ['e closed'], 'after shutdown a wait ends at once');
});

test('wait(): a signal that aborts ends it as closed, and a wait on an aborted signal is closed at once', async () => {
  const events = new HoldEvents();
  const gone = new AbortController();
  const waited = events.wait('pa_1', 60_000, gone.signal);
  gone.abort();
  assert.equal(await waited, 'closed');
  assert.equal(events.waiting, 0);
  assert.equal(await events.wait('pa_1', 60_000, gone.signal), 'closed');
  assert.equal(events.waiting, 0);
  events.close();
});

test('wait() after shutdown answers closed at once, with or without a signal', async () => {
  const events = new HoldEvents();
  events.close();
  assert.equal(await events.wait('pa_1', 60_000, new AbortController().signal), 'closed');
  assert.equal(await events.wait('pa_1', 60_000), 'closed');
  assert.equal(events.waiting, 0);
});

test('changedSince: a hold changed after a mark, a change of another not; past what is kept apart, maybe', () => {
  const events = new HoldEvents();
  const mark = events.mark;
  events.deliver('pa_1', 'ws_1');
  assert.equal(events.changedSince('pa_1', mark), true);
  assert.equal(events.changedSince('pa_2', mark), false);
  const later = events.mark;
  assert.equal(events.changedSince('pa_1', later), false);
  // More holds changed than are kept apart: a hold whose change is forgotten counts as changed.
  for (let i = 0; i < 2_000; i++) events.deliver(`pa_x${i}`, 'ws_1');
  assert.equal(events.changedSince('pa_2', later), true);
  assert.equal(events.changedSince('pa_2', events.mark), false);
  // Changes may have been missed: everything counts as changed.
  const beforeWake = events.mark;
  events.wakeAll();
  assert.equal(events.changedSince('pa_2', beforeWake), true);
});
