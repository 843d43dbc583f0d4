import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyIssueErrors, parseNewKeyForm } from './keys.ts';

test('a new key: live or test, agent or admin scope (agent when none is sent), name and binding trimmed', () => {
  assert.deepEqual(parseNewKeyForm({ env: 'test', name: ' CI ', agent: ' bot ', owner: 'ann@acme.test' }), {
    values: { env: 'test', scope: 'agent', name: 'CI', agent: 'bot', owner: 'ann@acme.test' },
    result: {
      ok: true,
      value: { env: 'test', scope: 'agent', name: 'CI', agent: 'bot', owner: 'ann@acme.test' },
    },
  });
});

test('each problem at its field; the values are kept to show again', () => {
  const { values, result } = parseNewKeyForm({ env: 'prod', scope: 'root', name: 'x'.repeat(101) });
  assert.equal(values.env, 'prod');
  assert.deepEqual(result, {
    ok: false,
    errors: {
      env: 'Choose live or test.',
      scope: 'Choose agent or admin.',
      name: 'Use at most 100 characters.',
    },
  });
});

test("the service's refusal at the field it names, else at the name", () => {
  assert.deepEqual(keyIssueErrors([{ field: 'owner', message: 'is no member' }], 'Invalid.'), {
    owner: 'Is no member.',
  });
  assert.deepEqual(keyIssueErrors([{ field: 'workspace', message: 'is full' }], 'Invalid.'), {
    name: 'Is full.',
  });
  assert.deepEqual(keyIssueErrors([], 'Refused.'), { name: 'Refused.' });
});
