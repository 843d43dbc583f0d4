import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkTarget, isInternalAddress } from './internal-addresses.ts';

test('internal addresses: loopback, private, link-local, CGNAT, unique-local, mapped, multicast', () => {
  const internal = [
    '127.0.0.1',
    '127.255.0.9',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '198.18.0.1',
    '224.0.0.1',
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '64:ff9b::7f00:1',
    'not an address',
  ];
  const external = ['8.8.8.8', '93.184.216.34', '172.32.0.1', '100.128.0.1', '2001:4860:4860::8888'];
  for (const address of internal) assert.equal(isInternalAddress(address), true, address);
  for (const address of external) assert.equal(isInternalAddress(address), false, address);
});

test('an IPv6 address that carries an IPv4 address is classified by that IPv4 address', () => {
  const internal = [
    '::ffff:0:7f00:1', // IPv4-translated (RFC 6145), 127.0.0.1
    '::127.0.0.1', // IPv4-compatible
    '::7f00:1', // the same, as the URL parser writes it
    '::a9fe:a9fe', // IPv4-compatible, 169.254.169.254
    '64:ff9b::a00:1', // NAT64 well-known prefix, 10.0.0.1
    '64:ff9b:1::7f00:1', // NAT64 local-use prefix, 127.0.0.1
    '64:ff9b:1:7f00:0:1:808:808', // local-use with the IPv4 elsewhere than the last 32 bits
    '2002:7f00:1::', // 6to4, 127.0.0.1
    '2002:a9fe:a9fe::', // 6to4, 169.254.169.254
    '2002:c0a8:101:1::1', // 6to4, 192.168.1.1
    '2001:0:4136:e378:8000:63bf:80ff:fffe', // Teredo, client 127.0.0.1 (stored inverted)
    '2001:0:4136:e378:8000:63bf:f5ff:fffe', // Teredo, client 10.0.0.1
  ];
  const external = [
    '::ffff:0:808:808',
    '::8.8.8.8',
    '::808:808',
    '64:ff9b::808:808',
    '64:ff9b:1::808:808',
    '2002:808:808::1',
    '2001:0:4136:e378:8000:63bf:f7f7:f7f7', // Teredo, client 8.8.8.8
  ];
  for (const address of internal) assert.equal(isInternalAddress(address), true, address);
  for (const address of external) assert.equal(isInternalAddress(address), false, address);
});

test('site-local, discard, documentation, benchmarking, reserved and unallocated ranges are internal', () => {
  const internal = [
    'fec0::1',
    '100::1',
    '2001:db8::1',
    '2001:2::1',
    '2001:10::1',
    '3fff::1',
    '4000::1',
    'e000::1',
    'fe80::1%eth0',
    'ff0e::1',
    '192.0.2.1',
    '198.51.100.1',
    '203.0.113.1',
    '240.0.0.1',
    '255.255.255.255',
    '0.1.2.3',
  ];
  for (const address of internal) assert.equal(isInternalAddress(address), true, address);
});

test('the URLs of issue 19 are refused when saved, and allowed with ALLOW_PRIVATE_TARGETS', async () => {
  for (const host of [
    '[::ffff:0:7f00:1]',
    '[64:ff9b:1::7f00:1]',
    '[2002:7f00:1::]',
    '[2002:a9fe:a9fe::]',
    '[::127.0.0.1]',
    '[fec0::1]',
    '[100::1]',
  ]) {
    await assert.rejects(checkTarget(`http://${host}/`, false), /internal address/, host);
    await checkTarget(`http://${host}/`, true);
  }
  await checkTarget('http://[2001:4860:4860::8888]/', false);
});

test('a name that resolves to loopback is refused before connecting, unless allowed', async () => {
  await assert.rejects(checkTarget('http://localhost:9/mcp', false), /internal address/);
  await assert.rejects(checkTarget('http://[::ffff:127.0.0.1]:9/', false), /internal address/);
  await checkTarget('http://localhost:9/mcp', true);
});
