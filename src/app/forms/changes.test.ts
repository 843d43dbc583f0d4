import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeField, readChanges } from './changes.ts';

test('a box is read as its argument’s type; an empty box of an argument the call lacks adds nothing', () => {
  const current = { amount: 10, memo: 'rent' };
  const form = {
    [changeField('amount')]: '12.5',
    [changeField('memo')]: 'rent',
    [changeField('note')]: '',
  };
  assert.deepEqual(readChanges(form, current, ['amount', 'memo', 'note']), {
    changes: { amount: 12.5, memo: 'rent' },
    errors: {},
  });
  // Typed into, it is read as JSON (the call has no type for it).
  assert.deepEqual(readChanges({ [changeField('note')]: '"hi"' }, current, ['note']).changes, { note: 'hi' });
  assert.deepEqual(readChanges({ [changeField('amount')]: '' }, current, ['amount']).errors, {
    amount: 'must be a number',
  });
});
