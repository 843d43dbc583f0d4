import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Form } from '../respond.ts';
import { attachIssues } from './form.ts';
import { parseWebhookForm, typedUrl, webhookEntry } from './webhook.ts';

test('the webhook form: the URL, trimmed, required', () => {
  assert.deepEqual(parseWebhookForm({ url: ' https://hooks.example/in ' }), {
    ok: true,
    value: { url: 'https://hooks.example/in' },
  });
  for (const form of [{}, { url: '  ' }, undefined] as (Form | undefined)[])
    assert.deepEqual(parseWebhookForm(form), {
      ok: false,
      errors: { url: 'Enter the URL of your receiver.' },
    });
  assert.equal(typedUrl({ url: ['a', ' b '] }), 'b');
});

test('the webhook entry is the stored one with the new URL', () => {
  assert.deepEqual(webhookEntry({ url: 'https://b.example' }, { url: 'https://a.example' }), {
    url: 'https://b.example',
  });
  assert.deepEqual(webhookEntry({ url: 'https://b.example' }, null), { url: 'https://b.example' });
});

test('the file check’s issues about the webhook land on its URL field', () => {
  const errors = {};
  const others = attachIssues(
    [
      { field: 'webhook.url', message: 'must be an http or https URL' },
      { field: '(change)', message: 'changed since' },
    ],
    'webhook',
    errors,
  );
  assert.deepEqual(errors, { url: 'must be an http or https URL' });
  assert.deepEqual(others, [{ field: '(change)', message: 'changed since' }]);
});
