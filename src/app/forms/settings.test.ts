import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readAddresses } from './settings.ts';

test('the addresses a settings form sets: typed punctuation of a phone number dropped, empty ones cleared', () => {
  const read = readAddresses({ phone: ' +1 (555) 010-0100 ', slack_user_id: 'U01ABC', teams_user_id: '' });
  assert.deepEqual(read, {
    values: { phone: '+15550100100', slack_user_id: 'U01ABC', teams_user_id: '' },
    change: { phone: '+15550100100', slack_user_id: 'U01ABC', teams_user_id: undefined },
  });
});

test('a settings form without address fields keeps the addresses', () => {
  assert.equal(readAddresses({ time_zone: 'Europe/Berlin' }), null);
});

test('a field sent twice counts once, the last value', () => {
  const read = readAddresses({ slack_user_id: ['U1', 'U2'], phone: '' });
  assert.equal(read?.values.slack_user_id, 'U2');
  assert.equal(read?.change.phone, undefined);
});
