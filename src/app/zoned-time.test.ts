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
      const local = localInput(instant, zone);
      const back = fromLocalInput(local, zone)!;
      // The same instant, or, in an hour a clock change repeats, the first time the clock showed it.
      assert.equal(localInput(back, zone), local, `${zone} ${hour}`);
      assert.ok(back === instant || (back < instant && instant - back <= 3_600_000), `${zone} ${hour}`);
    }
  }
});

test('a time a clock change skips names the change; one it repeats, its first occurrence', () => {
  assert.equal(fromLocalInput('2026-03-29T02:30', 'Europe/Berlin'), Date.parse('2026-03-29T01:00:00Z'));
  assert.equal(fromLocalInput('2026-10-25T02:30', 'Europe/Berlin'), Date.parse('2026-10-25T00:30:00Z'));
  assert.equal(fromLocalInput('2026-03-08T02:15', 'America/New_York'), Date.parse('2026-03-08T07:00:00Z'));
  assert.equal(fromLocalInput('2026-11-01T01:15', 'America/New_York'), Date.parse('2026-11-01T05:15:00Z'));
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
