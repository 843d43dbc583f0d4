import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupValuesOf, parseGroupMembersForm, parseNewGroupForm } from './groups.ts';

test('a new group: its name and members', () => {
  assert.deepEqual(parseNewGroupForm({ name: ' finance ', members: ['a@acme.test', 'b@acme.test'] }, []), {
    ok: true,
    value: { name: 'finance', members: ['a@acme.test', 'b@acme.test'] },
  });
});

test('a new group needs a free name of the allowed characters, and a member', () => {
  assert.deepEqual(parseNewGroupForm({ name: 'the team' }, []), {
    ok: false,
    errors: {
      name: 'Use 1 to 100 characters of A-Z a-z 0-9 _ . -',
      members: 'Choose at least one member.',
    },
  });
  assert.deepEqual(parseNewGroupForm({ name: 'ops', members: 'a@acme.test' }, ['ops']), {
    ok: false,
    errors: { name: 'A group with this name exists.' },
  });
});

test("a group's members: the name is the group's, at least one member", () => {
  assert.deepEqual(parseGroupMembersForm({ name: 'other', members: 'a@acme.test' }, 'ops'), {
    ok: true,
    value: { name: 'ops', members: ['a@acme.test'] },
  });
  assert.deepEqual(parseGroupMembersForm({}, 'ops'), {
    ok: false,
    errors: { members: 'Choose at least one member, or delete the group.' },
  });
  assert.deepEqual(groupValuesOf({ members: 'a@acme.test' }, 'ops'), {
    name: 'ops',
    members: ['a@acme.test'],
  });
});
