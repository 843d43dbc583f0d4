import assert from 'node:assert/strict';
import { test } from 'node:test';
import { quietUntil } from './quiet-hours.ts';
import { isTimeZone, timeZoneChoices } from './time-zones.ts';

const at = (iso: string) => Date.parse(iso);
const night = { from: '20:00', to: '08:00', weekends: false };

test('inside a window that runs past midnight: quiet until its end, in the member time zone', () => {
  // 23:30 in Berlin (UTC+1 in winter) is 22:30 UTC; quiet until 08:00 Berlin = 07:00 UTC.
  assert.equal(quietUntil(night, 'Europe/Berlin', at('2026-11-25T22:30:00Z')), at('2026-11-26T07:00:00Z'));
  // 07:59 Berlin: one minute left.
  assert.equal(quietUntil(night, 'Europe/Berlin', at('2026-11-26T06:59:30Z')), at('2026-11-26T07:00:00Z'));
  // 08:00 Berlin: not quiet.
  assert.equal(quietUntil(night, 'Europe/Berlin', at('2026-11-26T07:00:00Z')), null);
  // The same instant is working time in New York (17:30).
  assert.equal(quietUntil(night, 'America/New_York', at('2026-11-25T22:30:00Z')), null);
});

test('a window within one day, and no time zone meaning UTC', () => {
  const lunch = { from: '12:00', to: '13:00', weekends: false };
  assert.equal(quietUntil(lunch, null, at('2026-11-25T12:10:00Z')), at('2026-11-25T13:00:00Z'));
  assert.equal(quietUntil(lunch, null, at('2026-11-25T13:10:00Z')), null);
  assert.equal(quietUntil(null, 'Europe/Berlin', at('2026-11-25T02:00:00Z')), null);
});

test('weekends: a Friday night runs on to Monday morning', () => {
  const quiet = { ...night, weekends: true };
  // Friday 2026-11-27 21:00 UTC → Monday 2026-11-30 08:00 UTC.
  assert.equal(quietUntil(quiet, 'UTC', at('2026-11-27T21:00:00Z')), at('2026-11-30T08:00:00Z'));
  // Saturday noon, too.
  assert.equal(quietUntil(quiet, 'UTC', at('2026-11-28T12:00:00Z')), at('2026-11-30T08:00:00Z'));
  assert.equal(quietUntil(quiet, 'UTC', at('2026-11-30T09:00:00Z')), null);
});

test('across a change of daylight saving time the end is the local time asked for', () => {
  // Berlin leaves summer time on 2026-10-25 at 03:00 local. Quiet from 00:30 to 08:00 local.
  const early = { from: '00:30', to: '08:00', weekends: false };
  // 01:00 local (UTC+2) = 23:00 UTC the day before; 08:00 local is then UTC+1: 07:00 UTC.
  assert.equal(quietUntil(early, 'Europe/Berlin', at('2026-10-24T23:00:00Z')), at('2026-10-25T07:00:00Z'));
});

test('a quiet period ending in the hour a clock change skips or repeats ends when the clock first shows its end', () => {
  const late = { from: '20:00', to: '02:30', weekends: false };
  // Berlin skips 02:00–03:00 on 2026-03-29: at 01:00 UTC the clock jumps from 02:00 to 03:00 (and is past 02:30).
  assert.equal(quietUntil(late, 'Europe/Berlin', at('2026-03-28T23:00:00Z')), at('2026-03-29T01:00:00Z'));
  // It repeats 02:00–03:00 on 2026-10-25: 02:30 comes first at 00:30 UTC, in summer time.
  assert.equal(quietUntil(late, 'Europe/Berlin', at('2026-10-24T22:00:00Z')), at('2026-10-25T00:30:00Z'));
  // In the repeated hour, after the first 02:30 (01:10 UTC is 02:10 in winter time): it has ended.
  assert.equal(quietUntil(late, 'Europe/Berlin', at('2026-10-25T01:10:00Z')), null);
});

test('time zone names are checked', () => {
  assert.equal(isTimeZone('Europe/Berlin'), true);
  assert.equal(isTimeZone('Mars/Olympus'), false);
});

test('the zones to choose from go by their current names, each a zone the runtime knows', () => {
  const choices = timeZoneChoices();
  for (const name of ['Europe/Kyiv', 'Asia/Kolkata', 'Asia/Ho_Chi_Minh', 'America/Nuuk', 'Europe/Berlin'])
    assert.ok(choices.includes(name), name);
  for (const name of ['Europe/Kiev', 'Asia/Calcutta', 'Asia/Saigon'])
    assert.ok(!choices.includes(name), name);
  assert.deepEqual(
    choices.filter((name) => !isTimeZone(name)),
    [],
  );
  assert.deepEqual(choices, [...new Set(choices)].sort());
});
