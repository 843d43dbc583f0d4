import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MemberEntry } from './away.ts';
import { attachMemberIssues, type MemberFormContext, memberValuesOf, parseMemberForm } from './members.ts';

const NOW = Date.parse('2026-11-02T10:00:00Z');
const ada: MemberEntry = { email: 'ada@acme.test', name: 'Ada', role: 'admin' };
const bob: MemberEntry = {
  email: 'Bob@acme.test',
  name: 'Bob',
  role: 'approver',
  phone: '+15550100',
  channels: ['email', 'sms'],
  agents: ['bot-1'],
  time_zone: 'Europe/Berlin',
};
const adding: MemberFormContext = { now: NOW, saved: undefined, members: [ada, bob], ownRole: undefined };
const editing = (saved: MemberEntry, ownRole?: string): MemberFormContext => ({
  now: NOW,
  saved,
  members: [ada, bob],
  ownRole,
});

test('a new member: typed punctuation of a phone number dropped, agents one per line, no away', () => {
  const { result } = parseMemberForm(
    {
      email: ' carol@acme.test ',
      name: 'Carol',
      role: 'viewer',
      phone: '+1 (555) 010-0101',
      channels: ['email', 'sms'],
      agents: 'bot-2\n bot-3 \nbot-2\n',
    },
    adding,
  );
  assert.deepEqual(result, {
    ok: true,
    value: {
      email: 'carol@acme.test',
      name: 'Carol',
      role: 'viewer',
      phone: '+15550100101',
      channels: ['email', 'sms'],
      agents: ['bot-2', 'bot-3'],
      time_zone: null,
      quiet_hours: null,
      delegate: null,
    },
  });
});

test('each problem is attached to its field, and the values are kept to show again', () => {
  const { values, result } = parseMemberForm(
    { email: 'BOB@acme.test', name: 'Bob', role: 'root', channels: ['email', 'pigeon'], quiet_from: '20:00' },
    adding,
  );
  assert.equal(values.role, 'root');
  assert.deepEqual(values.channels, ['email', 'pigeon']);
  assert.deepEqual(result, {
    ok: false,
    errors: {
      email: 'Is already a member of this workspace.',
      role: 'Choose admin, approver or viewer.',
      channels: 'Choose among e-mail, SMS, Slack and Teams.',
      quiet_hours: 'Give both times, or neither for no quiet hours.',
    },
  });
});

test('a channel needs its address', () => {
  const errors = (channels: string[]) => {
    const { result } = parseMemberForm({ email: 'c@acme.test', name: 'C', role: 'viewer', channels }, adding);
    return result.ok ? {} : result.errors;
  };
  assert.deepEqual(errors(['sms']), { phone: 'SMS needs a phone number.' });
  assert.deepEqual(errors(['slack']), { slack_user_id: 'Slack needs a Slack user id.' });
  assert.deepEqual(errors(['teams']), { teams_user_id: 'Teams needs a Teams user id.' });
});

test('an admin cannot change their own role', () => {
  const { result } = parseMemberForm({ name: 'Ada', role: 'viewer' }, editing(ada, 'admin'));
  assert.deepEqual(result, {
    ok: false,
    errors: { role: 'You cannot change your own role. Ask another admin.' },
  });
});

test('an edit keeps the saved e-mail, and every field the form does not carry', () => {
  const saved = { ...bob, future_field: 'kept' } as MemberEntry;
  const { result } = parseMemberForm(
    {
      email: 'someone@else.test',
      name: 'Bobby',
      role: 'approver',
      channels: 'email',
      time_zone: 'Europe/Berlin',
    },
    editing(saved),
  );
  assert.ok(result.ok);
  assert.deepEqual(result.value, {
    email: 'Bob@acme.test',
    name: 'Bobby',
    role: 'approver',
    channels: ['email'],
    time_zone: 'Europe/Berlin',
    quiet_hours: null,
    delegate: null,
    future_field: 'kept',
  });
});

test('a member shown in the form and posted back unchanged is the same entry', () => {
  const full: MemberEntry = {
    ...bob,
    slack_user_id: 'U0BOB',
    teams_user_id: '00000000-0000-0000-0000-0000000000b0',
    channels: ['email', 'sms', 'slack', 'teams'],
    quiet_hours: { from: '20:00', to: '08:00', weekends: true },
    delegate: { to: 'ada@acme.test', from: '2026-11-01T09:00:00.000Z', until: '2026-11-09T17:00:00.000Z' },
  };
  const values = memberValuesOf(full);
  const { away, ...fields } = values;
  const form = {
    ...fields,
    time_zone: away.time_zone,
    quiet_from: away.quiet_from,
    quiet_to: away.quiet_to,
    quiet_weekends: away.quiet_weekends ? 'yes' : '',
    delegate_to: away.delegate_to,
    delegate_from: away.delegate_from,
    delegate_until: away.delegate_until,
    shown_zone: away.shown_zone,
  };
  assert.deepEqual(parseMemberForm(form, editing(full)).result, { ok: true, value: full });
});

test("the file's issues about the member land on the form's fields, in words for the away fieldset", () => {
  const errors = {};
  const elsewhere = attachMemberIssues(
    [
      { field: 'members.2.agents.0', message: 'is too long' },
      { field: 'members.2.delegate.to', message: 'is a viewer' },
      { field: 'members.1.phone', message: 'is taken' },
    ],
    'members.2',
    errors,
  );
  assert.deepEqual(errors, { agents: 'is too long', delegate: 'The member chosen is a viewer' });
  assert.deepEqual(elsewhere, [{ field: 'members.1.phone', message: 'is taken' }]);
});
