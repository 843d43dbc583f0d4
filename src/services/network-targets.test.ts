import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { checkTarget, guardedFetch, isInternalAddress } from './network-targets.ts';

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

test('a name that resolves to loopback is refused before connecting, unless allowed', async () => {
  await assert.rejects(checkTarget('http://localhost:9/mcp', false), /internal address/);
  await assert.rejects(checkTarget('http://[::ffff:127.0.0.1]:9/', false), /internal address/);
  await checkTarget('http://localhost:9/mcp', true);
});

let server: http.Server;
let port: number;
before(async () => {
  server = http.createServer((request, response) => {
    if (request.url === '/redirect') response.writeHead(302, { location: `http://127.0.0.1:${port}/` }).end();
    else response.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise((resolve) => server.close(resolve)));

test('the guarded fetch checks the address it connects to, and follows no redirect', async () => {
  const strict = guardedFetch(false);
  const open = guardedFetch(true);
  try {
    // A name checked at connect time: what a rebinding name turns into when the connection is made.
    await assert.rejects(strict.fetch(`http://localhost:${port}/`), (error: Error) =>
      /internal address refused/.test(String((error.cause as Error | undefined)?.message)),
    );
    assert.equal(await (await open.fetch(`http://localhost:${port}/`)).text(), 'ok');
    await assert.rejects(open.fetch(`http://localhost:${port}/redirect`));
  } finally {
    await Promise.all([strict.close(), open.close()]);
  }
});
