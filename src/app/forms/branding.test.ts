import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachBrandingIssues, parseBrandingForm } from './branding.ts';

const drawn = { accent_was: '#123456', picker_was: '#123456' };

test('the branding posted, as the workspace file takes it: empty fields clear', () => {
  assert.deepEqual(parseBrandingForm({ name: ' Acme ', logo_url: '', accent_color: '', action: 'save' }), {
    values: { name: 'Acme', logo_url: '', accent_color: '' },
    preview: false,
    change: { name: 'Acme', branding: { logo_url: null, accent_color: null } },
  });
  assert.equal(parseBrandingForm({ name: 'Acme', action: 'preview' }).preview, true);
});

test('two inputs for one colour: a changed text field wins, else a changed picker, else the text', () => {
  const accent = (typed: string, picked: string) =>
    parseBrandingForm({ ...drawn, accent_color: typed, accent_picker: picked }).values.accent_color;
  assert.equal(accent('#abcdef', '#ff0000'), '#abcdef');
  assert.equal(accent('#123456', '#ff0000'), '#ff0000');
  assert.equal(accent('#123456', '#123456'), '#123456');
  assert.equal(accent('#123456', 'red'), '#123456');
});

test("the file's issues about the name and branding land on their fields", () => {
  const errors = {};
  const elsewhere = attachBrandingIssues(
    [
      { field: 'name', message: 'is too long' },
      { field: 'branding.logo_url', message: 'must be an https URL' },
      { field: '(change)', message: 'was changed by Bob' },
    ],
    errors,
  );
  assert.deepEqual(errors, { name: 'is too long', logo_url: 'must be an https URL' });
  assert.deepEqual(elsewhere, [{ field: '(change)', message: 'was changed by Bob' }]);
});
