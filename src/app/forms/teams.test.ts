import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseTeamsForm } from './teams.ts';

const CHANNEL = '19:3f9a0b2c4d6e8f10a1b2c3d4e5f60718@thread.tacv2';

test('the channel posted, trimmed; empty is no channel', () => {
  assert.deepEqual(parseTeamsForm({ channel: ` ${CHANNEL} ` }), {
    channel: CHANNEL,
    change: { teams: { channel: CHANNEL } },
  });
  assert.deepEqual(parseTeamsForm({ channel: '' }), { channel: '', change: { teams: null } });
  assert.deepEqual(parseTeamsForm(undefined), { channel: '', change: { teams: null } });
});

test("the id as Teams' channel link has it (URL-encoded) is taken decoded; a stray % is left to the check", () => {
  assert.equal(parseTeamsForm({ channel: encodeURIComponent(CHANNEL) }).channel, CHANNEL);
  assert.equal(parseTeamsForm({ channel: '19:%zz@thread.tacv2' }).channel, '19:%zz@thread.tacv2');
});
