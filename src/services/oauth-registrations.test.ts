/**
 * What a registration's address counts by (issue 37, red team): an IPv4 address itself, however it is
 * written, and an IPv6 address's /64, so one network cannot multiply the bound by its addresses.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { registrationGroup } from './oauth-registrations.ts';

test('IPv4 counts by address, also written as IPv6; IPv6 counts by /64', () => {
  assert.equal(registrationGroup('203.0.113.7'), '203.0.113.7');
  // A dual-stack listener reports IPv4 clients this way: they must not share one /64.
  assert.equal(registrationGroup('::ffff:203.0.113.7'), '203.0.113.7');
  assert.notEqual(registrationGroup('::ffff:203.0.113.8'), registrationGroup('::ffff:203.0.113.7'));
  assert.equal(registrationGroup('2001:db8:5:6::1'), '2001:db8:5:6::/64');
  assert.equal(registrationGroup('2001:0db8:0005:0006:ffff:ffff:ffff:fffe'), '2001:db8:5:6::/64');
  assert.equal(registrationGroup('2001:db8:5:7::1'), '2001:db8:5:7::/64');
  assert.equal(registrationGroup('not an address'), 'not an address');
});
