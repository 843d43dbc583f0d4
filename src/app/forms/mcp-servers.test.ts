import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attachIssues } from './form.ts';
import {
  conflicts,
  parseHeaderLines,
  parseServerForm,
  refusedErrors,
  serverEntry,
  typedServer,
} from './mcp-servers.ts';

const typed = { slug: 'files', name: ' Files ', url: 'https://mcp.example.com/mcp', headers: '' };

test('a registration form: trimmed fields, no headers typed, the default timeout', () => {
  const parsed = parseServerForm(typed);
  assert.deepEqual(parsed, {
    ok: true,
    value: {
      slug: 'files',
      name: 'Files',
      url: 'https://mcp.example.com/mcp',
      headers: null,
      clear_headers: false,
    },
  });
});

test('header lines become headers; a bad line is an error on the headers field, by its line', () => {
  const parsed = parseServerForm({ ...typed, headers: 'Authorization: Bearer x\r\n\r\nX-Tenant:  t1  ' });
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.value.headers, { Authorization: 'Bearer x', 'X-Tenant': 't1' });
  assert.deepEqual(parseServerForm({ ...typed, headers: '\nAuthorization Bearer x' }), {
    ok: false,
    errors: { headers: 'Line 2: write each header as Name: value.' },
  });
  assert.deepEqual(parseHeaderLines('A: 1\na: 2'), { error: 'Line 2: a is given twice.' });
  assert.deepEqual(parseHeaderLines('X_Y: 1'), {
    error: 'Line 1: a header name has only letters, digits and dashes.',
  });
});

test('the call timeout: digits, or empty for the default; its bounds are the file check’s to say', () => {
  const timeout = (value: string) => parseServerForm({ ...typed, call_timeout_seconds: value });
  const seconds = (value: string) => {
    const parsed = timeout(value);
    assert.ok(parsed.ok);
    return parsed.value.call_timeout_seconds;
  };
  assert.equal(seconds('45'), 45);
  assert.equal(seconds('0'), 0);
  assert.equal(seconds(''), undefined);
  for (const bad of ['1.5', '-3', 'soon', '1234567890'])
    assert.deepEqual(timeout(bad), {
      ok: false,
      errors: { call_timeout_seconds: 'Must be a whole number of seconds from 1 to 86400.' },
    });
});

test('an edit takes the slug from its URL, not from a field', () => {
  const parsed = parseServerForm({ ...typed, slug: 'other' }, 'files');
  assert.ok(parsed.ok);
  assert.equal(parsed.value.slug, 'files');
  assert.equal(typedServer({ ...typed, slug: 'other' }, 'files').slug, 'files');
});

test('a refused form asks for typed headers again, unless they have an error of their own', () => {
  assert.deepEqual(refusedErrors({ headers: 'A: 1' }, { url: 'bad' }), {
    url: 'bad',
    headers: 'Type the headers again: their values are never sent back to a page.',
  });
  assert.deepEqual(refusedErrors({ headers: '' }, { url: 'bad' }), { url: 'bad' });
  assert.deepEqual(refusedErrors({ headers: 'A 1' }, { headers: 'Line 1: …' }), { headers: 'Line 1: …' });
});

test('conflicts: a slug taken when registering, a connection name another server has', () => {
  const servers = [{ slug: 'files', name: 'Files', url: 'https://a.example/mcp' }];
  assert.deepEqual(Object.keys(conflicts(servers, { slug: 'files', name: 'Other' }, true)), ['slug']);
  assert.deepEqual(conflicts(servers, { slug: 'files', name: 'Files' }, false), {});
  assert.deepEqual(conflicts(servers, { slug: 'docs', name: 'Files' }, true), {
    name: 'Is the name of server “files”: each server needs a connection name of its own.',
  });
});

test('the entry keeps what the form does not show, and the headers unless typed or cleared', () => {
  const stored = { slug: 'files', name: 'Files', url: 'https://a.example/mcp', call_timeout_seconds: 60 };
  const input = (fields: Record<string, string>) => {
    const parsed = parseServerForm({ ...typed, ...fields }, 'files');
    assert.ok(parsed.ok);
    return parsed.value;
  };
  assert.deepEqual(serverEntry(input({ call_timeout_seconds: '60' }), stored), {
    ...stored,
    name: 'Files',
    url: typed.url,
  });
  assert.deepEqual(serverEntry(input({}), stored), { slug: 'files', name: 'Files', url: typed.url });
  assert.deepEqual(serverEntry(input({ headers: 'A: 1' }), stored).headers, { A: '1' });
  assert.deepEqual(serverEntry(input({ clear_headers: 'yes' }), stored).headers, {});
  // A new registration never inherits the headers of a removed server of the same slug.
  assert.deepEqual(serverEntry(input({}), undefined).headers, {});
});

test('the file check’s issues about this server land on its fields; the others are left for the summary', () => {
  const errors = {};
  const issues = [
    { field: 'mcp_servers.1.url', message: 'must be an http or https URL' },
    { field: 'mcp_servers.0.name', message: 'is used by another server' },
  ];
  const others = attachIssues(issues, 'mcp_servers.1', errors);
  assert.deepEqual(errors, { url: 'must be an http or https URL' });
  assert.deepEqual(others, [issues[1]]);
});
