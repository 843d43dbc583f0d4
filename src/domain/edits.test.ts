import assert from 'node:assert/strict';
import { test } from 'node:test';
import { onlyEditableChanged, readTypedValue, typedText, withChanges } from './edits.ts';

test('changes set their paths, objects made on the way; not through a list or a text', () => {
  const base = { amount: 5, customer: { memo: 'a', id: 1 }, tags: ['x'] };
  assert.deepEqual(withChanges(base, { amount: 4, 'customer.memo': 'b', 'extra.note': 'n' }), {
    amount: 4,
    customer: { memo: 'b', id: 1 },
    tags: ['x'],
    extra: { note: 'n' },
  });
  assert.equal(base.amount, 5, 'the base is not changed');
  assert.equal(withChanges(base, { 'tags.0': 'y' }), null);
  assert.equal(withChanges(base, { 'customer.memo.x': 1 }), null);
});

test('only the editable paths may differ from the submission', () => {
  const submitted = { amount: 5, customer: { memo: 'a', id: 1 } };
  assert.ok(
    onlyEditableChanged(submitted, { amount: 9, customer: { memo: 'b', id: 1 } }, [
      'amount',
      'customer.memo',
    ]),
  );
  assert.ok(
    !onlyEditableChanged(submitted, { amount: 9, customer: { memo: 'a', id: 2 } }, [
      'amount',
      'customer.memo',
    ]),
  );
  assert.ok(!onlyEditableChanged(submitted, { amount: 5, customer: 'x' }, ['customer.memo']));
});

test('a typed value is read as the argument is typed', () => {
  assert.deepEqual(readTypedValue({ found: true, value: 'memo' }, ' 12 '), { value: ' 12 ' });
  assert.deepEqual(readTypedValue({ found: true, value: 3 }, ' 12.5 '), { value: 12.5 });
  assert.deepEqual(readTypedValue({ found: true, value: 3 }, 'twelve'), { error: 'must be a number' });
  assert.deepEqual(readTypedValue({ found: true, value: 3 }, ''), { error: 'must be a number' });
  assert.deepEqual(readTypedValue({ found: true, value: false }, 'true'), { value: true });
  assert.deepEqual(readTypedValue({ found: false }, '{"a":[1]}'), { value: { a: [1] } });
  assert.deepEqual(readTypedValue({ found: true, value: null }, 'nope'), { error: 'must be a JSON value' });
  for (const value of ['text', 4, true, { a: 1 }, null])
    assert.deepEqual(readTypedValue({ found: true, value }, typedText(value)), { value });
});
