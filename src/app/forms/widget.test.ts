import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Form } from '../respond.ts';
import { readRevokeForm } from './widget.ts';

test("the widget's revoke form names a token, trimmed", () => {
  assert.deepEqual(readRevokeForm({ _csrf: 'x', token: ' abc123 ' }), {
    ok: true,
    value: { token: 'abc123' },
  });
});

test('a revoke form without a token is refused on its field', () => {
  for (const form of [{}, { token: '' }, { token: '  ' }, undefined] as (Form | undefined)[])
    assert.deepEqual(readRevokeForm(form), { ok: false, errors: { token: 'Choose a token to revoke.' } });
});
