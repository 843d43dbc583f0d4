import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appPath } from './app-path.ts';

test('a redirect target is a path of the app, nothing else', () => {
  for (const path of ['/app/holds/svc_pa_abc', '/app/inbox?sort=deadline&tool=pay*', '/app/history'])
    assert.equal(appPath(path), path);
  for (const refused of [
    'https://evil.test/app/inbox',
    '//evil.test/app/inbox',
    '/\\evil.test/app',
    '/app/\\evil.test',
    '/app//evil.test',
    '\t//evil.test',
    '/app/x\r\nSet-Cookie: a=b',
    'javascript:alert(1)',
    '/docs',
    '/app',
    '/app/login/token',
    '/app/../docs',
    '/app/%2e%2e/docs',
    'x'.repeat(3000),
    undefined,
    ['/app/inbox'],
  ])
    assert.equal(appPath(refused), null, JSON.stringify(refused));
});
