/**
 * Reading a posted form with zod (form.ts): fields as the browser sends them (absent, once, repeated),
 * problems by dotted path, and a service's issues attached to the fields of the item a form edited.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { attachIssues, checkbox, type FieldErrors, list, parseForm, text } from './form.ts';

test('text: the last value, trimmed; absent or not text is empty', () => {
  const schema = z.object({ name: text(), note: text(), other: text() });
  const parsed = parseForm(schema, { name: '  Ada ', note: ['first', ' last '] });
  assert.deepEqual(parsed, { ok: true, value: { name: 'Ada', note: 'last', other: '' } });
});

test('list: every non-empty value, trimmed, whether sent once, repeated or not at all', () => {
  const schema = z.object({ once: list(), repeated: list(), none: list() });
  const parsed = parseForm(schema, { once: ' a ', repeated: ['b', '', ' c'] });
  assert.deepEqual(parsed, { ok: true, value: { once: ['a'], repeated: ['b', 'c'], none: [] } });
});

test('checkbox: true when sent with any value, false when absent or empty', () => {
  const schema = z.object({ on: checkbox(), empty: checkbox(), off: checkbox() });
  const parsed = parseForm(schema, { on: 'yes', empty: '' });
  assert.deepEqual(parsed, { ok: true, value: { on: true, empty: false, off: false } });
});

test('problems come back by dotted path, the first of each field; a body that is no form, under (form)', () => {
  const schema = z.object({
    name: text().pipe(z.string().min(1, 'Give a name.').max(3, 'Too long.')),
    limits: z.object({ count: text().pipe(z.string().regex(/^\d+$/, 'Give a number.')) }),
  });
  assert.deepEqual(parseForm(schema, { limits: { count: 'x' } } as never), {
    ok: false,
    errors: { name: 'Give a name.', 'limits.count': 'Give a number.' },
  });
  assert.deepEqual(parseForm(z.object({ x: text() }), ['not', 'a', 'form'] as never), {
    ok: false,
    errors: { '(form)': 'Invalid input: expected object, received array' },
  });
  assert.deepEqual(parseForm(z.object({ x: text() }), undefined), { ok: true, value: { x: '' } });
});

test("attachIssues: the edited item's issues on its fields, the first message kept; the rest returned", () => {
  const errors: FieldErrors = { phone: 'Typed wrong.' };
  const issues = [
    { field: 'members.3.phone', message: 'must be E.164' },
    { field: 'members.3.name', message: 'is required' },
    { field: 'members.30.name', message: 'another member' },
    { field: 'rules.0.approvers.0', message: 'is not a member of the workspace' },
  ];
  const rest = attachIssues(issues, 'members.3', errors);
  assert.deepEqual(errors, { phone: 'Typed wrong.', name: 'is required' });
  assert.deepEqual(rest, [issues[2], issues[3]]);
});
