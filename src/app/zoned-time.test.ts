import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromLocalInput, localInput } from './zoned-time.ts';

test('a local date-time in a zone and the instant it names, both ways, across a clock change', () => {
  const at = Date.parse('2026-12-01T09:00:00Z');
  assert.equal(localInput(at, 'Europe/Berlin'), '2026-12-01T10:00');
  assert.equal(localInput(at, 'America/New_York'), '2026-12-01T04:00');
  assert.equal(localInput(at + 30_000, 'UTC'), '2026-12-01T09:00:30');
  assert.equal(fromLocalInput('2026-12-01T10:00', 'Europe/Berlin'), at);
  // Summer time: another offset.
  assert.equal(fromLocalInput('2026-07-01T10:00:30', 'Europe/Berlin'), Date.parse('2026-07-01T08:00:30Z'));
  assert.equal(fromLocalInput('2026-06-01T00:00', 'Asia/Kolkata'), Date.parse('2026-05-31T18:30:00Z'));
  for (const zone of ['Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'UTC']) {
    for (let hour = 0; hour < 24 * 400; hour += 7) {
      const instant = Date.parse('2026-01-01T00:00:00Z') + hour * 3_600_000;
      assert.equal(fromLocalInput(localInput(instant, zone), zone), instant, `${zone} ${hour}`);
    }
  }
});

test('what is no date-time is null', () => {
  for (const text of [
    '',
    'x',
    '2026-11-31T10:00',
    '2026-11-30T24:00',
    '2026-11-30T10:60',
    '2026-11-30 10:00',
  ])
    assert.equal(fromLocalInput(text, 'UTC'), null, text);
});
