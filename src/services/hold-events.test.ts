/** Who hears a hold change: a routine one (an allowed call, its result) wakes readers, not the workers. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HoldEvents } from './hold-events.ts';

test('a routine change wakes waiters and watchers of the workspace, not the workers; any other wakes all', async () => {
  const events = new HoldEvents();
  const heard: string[] = [];
  const shared: { hold: string; routine: boolean }[] = [];
  events.broadcast = (hold, _workspace, routine) => shared.push({ hold, routine });
  events.watchAll((hold) => heard.push(`worker ${hold}`));
  events.watch('ws_1', (event) => heard.push(`app ${event}`));

  const waited = events.wait('pa_1', 10_000);
  events.publish('pa_1', 'ws_1', { routine: true });
  assert.equal(await waited, 'woken');
  assert.deepEqual(heard, ['app changed']);

  events.publish('pa_2', 'ws_1');
  assert.deepEqual(heard, ['app changed', 'worker pa_2', 'app changed']);
  // The other instances are told which kind it was, and deliver it the same way.
  assert.deepEqual(shared, [
    { hold: 'pa_1', routine: true },
    { hold: 'pa_2', routine: false },
  ]);
  events.deliver('pa_3', 'ws_1', true);
  assert.deepEqual(heard.slice(3), ['app changed']);
  events.close();
});
