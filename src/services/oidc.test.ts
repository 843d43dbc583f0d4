import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mappedRole } from './oidc.ts';

test('the highest role the claim maps to; names Object has (constructor, __proto__) map to none', () => {
  const client = { rolesClaim: 'groups', roles: { staff: 'viewer', finance: 'approver' } as const };
  assert.equal(mappedRole(client, { groups: ['staff', 'finance'] }), 'approver');
  assert.equal(mappedRole(client, { groups: 'staff' }), 'viewer');
  assert.equal(mappedRole(client, { groups: ['constructor', 'toString', '__proto__'] }), null);
  assert.equal(mappedRole(client, { groups: ['constructor', 'staff'] }), 'viewer');
});
