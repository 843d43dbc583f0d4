import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readLoginForm, readSetupForm } from './auth.ts';

test('a sign-in form: an address a link can go to, and where to go after, a path of the app only', () => {
  assert.deepEqual(readLoginForm({ email: ' ann@acme.test ', next: '/app/holds/svc_pa_1' }), {
    email: 'ann@acme.test',
    next: '/app/holds/svc_pa_1',
  });
  assert.deepEqual(readLoginForm({ email: 'ann@acme.test', next: 'https://evil.test/app' }), {
    email: 'ann@acme.test',
    next: null,
  });
});

test('a sign-in form with no address a link can go to sends none', () => {
  for (const email of ['', 'ann', 'ann @acme.test', '@acme.test', `${'a'.repeat(250)}@acme.test`])
    assert.equal(readLoginForm({ email }).email, null, email);
  assert.deepEqual(readLoginForm(undefined), { email: null, next: null });
});

test('the setup form is read as typed, trimmed; the service checks it', () => {
  assert.deepEqual(readSetupForm({ name: ' Acme ', slug: 'acme', admin_name: 'Ann', admin_email: 'x' }), {
    name: 'Acme',
    slug: 'acme',
    admin_name: 'Ann',
    admin_email: 'x',
  });
  assert.deepEqual(readSetupForm({}), { name: '', slug: '', admin_name: '', admin_email: '' });
});
