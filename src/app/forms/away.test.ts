import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readAwayForm } from './away.ts';

const NOW = Date.UTC(2026, 10, 20, 12, 0);
const form = (fields: Record<string, string>) => ({
  time_zone: 'Europe/Berlin',
  delegate_to: 'dan@acme.test',
  shown_zone: 'UTC',
  ...fields,
});

test('a save that changes the zone and a date-time reads the date-time in the new zone', () => {
  const { change, errors } = readAwayForm(
    form({ delegate_from: '2026-12-01T10:00', delegate_until: '2026-12-02T18:30' }),
    NOW,
  );
  assert.deepEqual(errors, {});
  assert.equal(change.time_zone, 'Europe/Berlin');
  assert.deepEqual(change.delegate, {
    to: 'dan@acme.test',
    from: '2026-12-01T09:00:00.000Z',
    until: '2026-12-02T17:30:00.000Z',
  });
});

test('a date-time left as the form showed it keeps its moment when only the zone changes', () => {
  const saved = { to: 'dan@acme.test', from: '2026-12-01T10:00:00.000Z', until: '2026-12-02T18:30:00.000Z' };
  // Shown in New York (the zone saved before), the zone changed to Berlin, the start left alone, the end typed anew.
  const { change } = readAwayForm(
    form({
      shown_zone: 'America/New_York',
      delegate_from: '2026-12-01T05:00',
      delegate_until: '2026-12-03T09:00',
    }),
    NOW,
    saved,
  );
  assert.deepEqual(change.delegate, {
    to: 'dan@acme.test',
    from: '2026-12-01T10:00:00.000Z',
    until: '2026-12-03T08:00:00.000Z',
  });
});

test('with no zone chosen, date-times are read in UTC; with a zone that is no zone, nothing is read', () => {
  const utc = readAwayForm(
    form({ time_zone: '', delegate_from: '2026-12-01T10:00', delegate_until: '2026-12-02T10:00' }),
    NOW,
  );
  assert.equal(utc.change.delegate?.from, '2026-12-01T10:00:00.000Z');
  const wrong = readAwayForm(form({ time_zone: 'Mars/Olympus', delegate_until: '2026-12-02T10:00' }), NOW);
  assert.deepEqual(Object.keys(wrong.errors), ['time_zone']);
});
