import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEnrolForm, readRemoveForm, readSignInForm } from './passkeys.ts';

test('an enrolment form: the JSON answer parsed, empty optional fields absent', () => {
  assert.deepEqual(
    readEnrolForm({ ceremony: 'c1', response: '{"id":"abc"}', name: ' Laptop ', confirmation: '', link: '' }),
    { ceremony: 'c1', response: { id: 'abc' }, name: 'Laptop', confirmation: null, link: undefined },
  );
  const fromLink = readEnrolForm({
    ceremony: 'c1',
    response: '{}',
    name: '',
    confirmation: 'sig',
    link: 'tok',
  });
  assert.equal(fromLink.confirmation, 'sig');
  assert.equal(fromLink.link, 'tok');
});

test('an answer that is not JSON, or no form at all, reads as null for the service to refuse', () => {
  assert.equal(readSignInForm({ ceremony: 'c1', response: '{not json' }).response, null);
  assert.deepEqual(readSignInForm(undefined), { ceremony: '', response: null });
  assert.deepEqual(readRemoveForm({ id: ['a', 'b'] }), { id: 'b' });
});
