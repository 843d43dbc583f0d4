import assert from 'node:assert/strict';
import { test } from 'node:test';
import { relativeText } from './time-text.ts';

const MIN = 60_000;
const NOW = Date.UTC(2026, 10, 23, 12, 0);

test('a deadline in 1 h 59 min reads so: hours and minutes under two days, never rounded down to the hour', () => {
  assert.equal(relativeText(NOW + 119 * MIN + 59_000, NOW), 'in 1 h 59 min');
  assert.equal(relativeText(NOW + 120 * MIN, NOW), 'in 2 h');
  assert.equal(relativeText(NOW - 61 * MIN, NOW), '1 h 1 min ago');
  assert.equal(relativeText(NOW + (47 * 60 + 59) * MIN, NOW), 'in 47 h 59 min');
});

test('minutes under an hour, days and hours from two days, now under a minute: never more than there is', () => {
  assert.equal(relativeText(NOW + 59 * MIN + 59_000, NOW), 'in 59 min');
  assert.equal(relativeText(NOW + 59_000, NOW), 'now');
  assert.equal(relativeText(NOW - 59_000, NOW), 'now');
  assert.equal(relativeText(NOW + 50 * 60 * MIN, NOW), 'in 2 d 2 h');
  assert.equal(relativeText(NOW - 3 * 24 * 60 * MIN, NOW), '3 d ago');
});
