import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseSlackForm } from './slack.ts';

test('the channel posted, trimmed; empty is no channel', () => {
  assert.deepEqual(parseSlackForm({ channel: ' C0OPS ' }), {
    channel: 'C0OPS',
    change: { slack: { channel: 'C0OPS' } },
  });
  assert.deepEqual(parseSlackForm({ channel: '' }), { channel: '', change: { slack: null } });
  assert.deepEqual(parseSlackForm(undefined), { channel: '', change: { slack: null } });
});
