import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { after, before, test } from 'node:test';
import { guardedConnector, httpClient, RequestFailed } from './http-client.ts';

let server: http.Server;
let base: string;
const connections: { count: number; requests: number } = { count: 0, requests: 0 };
before(async () => {
  server = http.createServer((request, response) => {
    connections.requests += 1;
    if (request.url === '/redirect') response.writeHead(302, { location: `${base}/` }).end('moved');
    else if (request.url === '/large') response.end('x'.repeat(1024 * 1024));
    else if (request.url === '/silent')
      return; // never answers
    else response.end('ok');
  });
  server.on('connection', () => (connections.count += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
});

const failure = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => assert.fail('answered'),
    (error: unknown) => error,
  );
  assert.ok(error instanceof RequestFailed, String(error));
  return error.message;
};
const get = { method: 'GET', timeoutMs: 5000 } as const;

test('an internal address is refused before anything is sent, unless allowed', async () => {
  const strict = httpClient({ allowPrivate: false });
  const open = httpClient({ allowPrivate: true });
  try {
    const before = connections.requests;
    const local = base.replace('127.0.0.1', 'localhost');
    for (const url of [`${base}/`, local, `http://[::ffff:7f00:1]:9/`, 'http://[::1]:9/'])
      assert.equal(await failure(strict.send(url, get)), 'internal address refused', url);
    await assert.rejects(strict.fetch(`${local}/`), (error: Error) =>
      /internal address refused/.test(String((error.cause as Error | undefined)?.message)),
    );
    assert.equal(connections.requests, before, 'no request reached the server');
    assert.equal((await open.send(`${local}/`, get)).text, 'ok');
  } finally {
    await Promise.all([strict.close(), open.close()]);
  }
});

test('the address a socket is connected to is checked, whatever the name resolved to', async () => {
  // A resolver that answers loopback for any name, as a name re-pointed inside would resolve.
  const rebinding: LookupFunction = (_hostname, options, callback) =>
    (options as { all?: boolean }).all
      ? (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [
          { address: '127.0.0.1', family: 4 },
        ])
      : callback(null, '127.0.0.1', 4);
  const client = httpClient({ allowPrivate: false, connect: guardedConnector(false, rebinding) });
  try {
    const before = { ...connections };
    const port = new URL(base).port;
    assert.equal(
      await failure(client.send(`http://public.example:${port}/`, get)),
      'internal address refused',
    );
    assert.equal(connections.count, before.count + 1, 'the connection was made, then refused');
    assert.equal(connections.requests, before.requests, 'and no request was sent on it');
  } finally {
    await client.close();
  }
});

test('no redirect is followed: send answers the 3xx, fetch fails', async () => {
  const client = httpClient({ allowPrivate: true });
  try {
    const answer = await client.send(`${base}/redirect`, get);
    assert.deepEqual([answer.status, answer.ok, answer.text], [302, false, 'moved']);
    await assert.rejects(client.fetch(`${base}/redirect`));
  } finally {
    await client.close();
  }
});

test('the wait is bounded, the answer read is capped, failures are named', async () => {
  const client = httpClient({ allowPrivate: true });
  try {
    assert.equal(
      await failure(client.send(`${base}/silent`, { method: 'GET', timeoutMs: 300 })),
      'timed out after 0.3 s',
    );
    const large = await client.send(`${base}/large`, { ...get, maxAnswerBytes: 1000 });
    assert.equal(large.text.length, 1000);
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    assert.equal(await failure(client.send(`http://127.0.0.1:${port}/`, get)), 'ECONNREFUSED');
    assert.equal(await failure(client.send('ftp://127.0.0.1/', get)), 'invalid URL');
    assert.equal(await failure(client.send('not a url', get)), 'invalid URL');
  } finally {
    await client.close();
  }
});

test('connections are kept alive and reused', async () => {
  const client = httpClient({ allowPrivate: true });
  try {
    const before = connections.count;
    for (let i = 0; i < 5; i++) assert.equal((await client.send(`${base}/`, get)).text, 'ok');
    // The pool may open a second connection while the first is being released; it reuses them.
    assert.ok(connections.count - before <= 2, `${connections.count - before} connections for 5 requests`);
  } finally {
    await client.close();
  }
});
