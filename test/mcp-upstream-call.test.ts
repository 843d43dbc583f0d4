/**
 * A tools/call to a 2025-era upstream session without the MCP SDK's client (src/mcp/upstream-call.ts),
 * against upstreams on loopback that answer as the 2025-11-25 transport allows: as JSON, on an event
 * stream with progress and requests of their own first, or by ending the stream before the answer and
 * letting the client resume it (`Last-Event-ID`), or not at all. The SDK-based proxy tests run the
 * same path against the SDK's own servers; these are the cases those servers do not make.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ProtocolError, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
import { callToolOverHttp, type UpstreamCallOptions } from '../src/mcp/upstream-call.ts';
import { httpClient } from '../src/net/http-client.ts';
import { failureOf } from './support/http.ts';
import { until } from './support/wait.ts';

interface Received {
  method: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** An upstream whose every answer is `respond`'s; it records what it received. */
async function startUpstream(respond: (request: Received, response: http.ServerResponse) => void) {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const entry = {
        method: request.method!,
        headers: request.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      received.push(entry);
      respond(entry, response);
    });
  });
  let connections = 0;
  let finished = 0;
  server.on('connection', () => (connections += 1));
  server.on('request', (_request, response: http.ServerResponse) =>
    response.on('finish', () => (finished += 1)),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    connections: () => connections,
    /** Answers written to their end. */
    finished: () => finished,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sse = (response: http.ServerResponse) =>
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
const event = (message: object, id?: string) =>
  `${id ? `id: ${id}\n` : ''}event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', ...message })}\n\n`;

const network = httpClient({ allowPrivate: true });
const session = (url: string) => ({
  url,
  headers: {
    authorization: 'Bearer upstream-key',
    'mcp-session-id': 'up-1',
    'mcp-protocol-version': '2025-11-25',
  },
});
const options = (overrides: Partial<UpstreamCallOptions> = {}): UpstreamCallOptions => ({
  timeoutMs: 5_000,
  onProgress: () => undefined,
  onRequest: async () => ({}),
  onNotification: () => undefined,
  ...overrides,
});
const echo = { name: 'echo', arguments: { text: 'hi' } };
const result = { content: [{ type: 'text', text: 'echoed' }] };

describe('a tools/call to a 2025-era upstream, without the SDK client', () => {
  after(() => network.close());

  test('a JSON answer: the result; the request carries the session, the credentials and a progress token', async () => {
    const upstream = await startUpstream(({ body }, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
    });
    try {
      assert.deepEqual(
        await callToolOverHttp(network, session(upstream.url), 'c-1', echo, options()),
        result,
      );
      const [sent] = upstream.received;
      assert.equal(sent!.headers['mcp-session-id'], 'up-1');
      assert.equal(sent!.headers['mcp-protocol-version'], '2025-11-25');
      assert.equal(sent!.headers.authorization, 'Bearer upstream-key');
      assert.match(String(sent!.headers.accept), /application\/json/);
      assert.match(String(sent!.headers.accept), /text\/event-stream/);
      assert.deepEqual(sent!.body, {
        jsonrpc: '2.0',
        id: 'c-1',
        method: 'tools/call',
        params: { ...echo, _meta: { progressToken: 'c-1' } },
      });
    } finally {
      await upstream.close();
    }
  });

  test('an event stream: progress, a log message and a request of its own before the result', async () => {
    let answered: unknown;
    const upstream = await startUpstream(({ body }, response) => {
      if (body.method !== 'tools/call') {
        answered = body;
        response.writeHead(202).end();
        return;
      }
      sse(response);
      response.write(
        event({
          method: 'notifications/progress',
          params: { progressToken: body.id, progress: 1, total: 2 },
        }),
      );
      response.write(event({ method: 'notifications/message', params: { level: 'info', data: 'working' } }));
      response.write(event({ id: 7, method: 'roots/list' }));
      // The result only once the request is answered, as a tool that needs the roots would.
      void until('the answer to its request', () => answered).then(() =>
        response.end(event({ id: body.id, result })),
      );
    });
    try {
      const progress: unknown[] = [];
      const notifications: unknown[] = [];
      const asked: unknown[] = [];
      const answer = await callToolOverHttp(
        network,
        session(upstream.url),
        'c-2',
        echo,
        options({
          onProgress: (p) => progress.push(p),
          onNotification: (n) => notifications.push(n),
          onRequest: async (request) => {
            asked.push(request);
            return { roots: [{ uri: 'file:///work' }] };
          },
        }),
      );
      assert.deepEqual(answer, result);
      assert.deepEqual(progress, [{ progress: 1, total: 2 }]);
      assert.deepEqual(notifications, [
        { method: 'notifications/message', params: { level: 'info', data: 'working' } },
      ]);
      assert.deepEqual(asked, [{ method: 'roots/list', params: undefined }]);
      assert.deepEqual(answered, { jsonrpc: '2.0', id: 7, result: { roots: [{ uri: 'file:///work' }] } });
    } finally {
      await upstream.close();
    }
  });

  test('a stream ended before the answer is resumed with Last-Event-ID after the wait the upstream asked', async () => {
    const upstream = await startUpstream(({ method, body, headers }, response) => {
      sse(response);
      if (method === 'POST') {
        // The 2025-11-25 priming event, then the stream ends: the client is to come back.
        response.end(`id: e-1\nretry: 20\ndata: \n\n`);
      } else if (headers['last-event-id'] === 'e-1') {
        response.end(
          event({ method: 'notifications/progress', params: { progressToken: 'c-3', progress: 1 } }, 'e-2'),
        );
      } else {
        response.end(event({ id: 'c-3', result }, 'e-3'));
      }
      void body;
    });
    try {
      const progress: unknown[] = [];
      const answer = await callToolOverHttp(
        network,
        session(upstream.url),
        'c-3',
        echo,
        options({ onProgress: (p) => progress.push(p) }),
      );
      assert.deepEqual(answer, result);
      assert.deepEqual(progress, [{ progress: 1 }]);
      const resumed = upstream.received.filter((request) => request.method === 'GET');
      assert.deepEqual(
        resumed.map((request) => request.headers['last-event-id']),
        ['e-1', 'e-2'],
      );
      for (const request of resumed) {
        assert.equal(request.headers['mcp-session-id'], 'up-1');
        assert.equal(request.headers.authorization, 'Bearer upstream-key');
      }
    } finally {
      await upstream.close();
    }
  });

  test('a stream ended with nothing to resume from: the connection was lost (the call may have run)', async () => {
    const upstream = await startUpstream((_request, response) => {
      sse(response);
      response.end();
    });
    try {
      const failure = await failureOf<SdkError>(
        callToolOverHttp(network, session(upstream.url), 'c-4', echo, options()),
      );
      assert.equal(failure.code, SdkErrorCode.ConnectionClosed);
    } finally {
      await upstream.close();
    }
  });

  test("the upstream's JSON-RPC error, an HTTP refusal and an answer that is no tool result", async () => {
    let answer: (id: string, response: http.ServerResponse) => void = () => undefined;
    const upstream = await startUpstream(({ body }, response) => answer(body.id, response));
    try {
      const failure = () =>
        failureOf<{ code: unknown; message: string; data?: unknown }>(
          callToolOverHttp(network, session(upstream.url), 'c-5', echo, options()),
        );
      answer = (id, response) => {
        sse(response);
        response.end(event({ id, error: { code: -32602, message: 'Unknown tool', data: { name: 'echo' } } }));
      };
      const refused = await failure();
      assert.ok(refused instanceof ProtocolError);
      assert.equal(refused.code, -32602);
      assert.deepEqual(refused.data, { name: 'echo' });

      answer = (_id, response) => response.writeHead(404, { 'content-type': 'application/json' }).end('{}');
      const forgotten = await failure();
      assert.equal(forgotten.code, SdkErrorCode.SendFailed);
      assert.deepEqual(forgotten.data, { status: 404 });

      answer = (id, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ jsonrpc: '2.0', id, result: 'not a tool result' }));
      };
      assert.equal((await failure()).code, SdkErrorCode.InvalidResult);
    } finally {
      await upstream.close();
    }
  });

  test('a stream that cannot be resumed is a lost connection: the call, which may have run, is never sent again', async () => {
    for (const resumed of [404, 405]) {
      const upstream = await startUpstream(({ method }, response) => {
        if (method === 'GET')
          return void response.writeHead(resumed, { 'content-type': 'application/json' }).end('{}');
        sse(response);
        response.end('id: e-1\nretry: 10\ndata: \n\n');
      });
      try {
        const failure = await failureOf<SdkError>(
          callToolOverHttp(network, session(upstream.url), 'r-1', echo, options()),
        );
        assert.equal(failure.code, SdkErrorCode.ConnectionClosed, `GET answered ${resumed}`);
        assert.equal(upstream.received.filter((request) => request.method === 'POST').length, 1);
      } finally {
        await upstream.close();
      }
    }
  });

  test('keep-alive comments are no sign of life: a stream resumed only to keep quiet is given up', async () => {
    const upstream = await startUpstream(({ method }, response) => {
      sse(response);
      if (method === 'POST') return void response.end('id: e-1\nretry: 10\ndata: \n\n');
      response.end(': keepalive\n\n: keepalive\n\n');
    });
    try {
      const failure = await failureOf<SdkError>(
        callToolOverHttp(network, session(upstream.url), 'q-1', echo, options()),
      );
      assert.equal(failure.code, SdkErrorCode.ConnectionClosed);
      assert.equal(upstream.received.filter((request) => request.method === 'GET').length, 3);
    } finally {
      await upstream.close();
    }
  });

  test('a CRLF split between two chunks, and a data field over two lines', async () => {
    const upstream = await startUpstream(({ body }, response) => {
      sse(response);
      response.write(`data: {"jsonrpc":"2.0","id":"${body.id}","result":\r`);
      setTimeout(() => response.end('\ndata: {"content":[{"type":"text","text":"split"}]}}\r\n\r\n'), 20);
    });
    try {
      assert.deepEqual(await callToolOverHttp(network, session(upstream.url), 'x-1', echo, options()), {
        content: [{ type: 'text', text: 'split' }],
      });
    } finally {
      await upstream.close();
    }
  });

  test('a result in the form the SDK client gave it: what a tool result does not have is left out', async () => {
    const upstream = await startUpstream(({ body }, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: body.id,
          result: { isError: false, content: [{ type: 'text', text: 'a', extra: 1 }] },
        }),
      );
    });
    try {
      assert.deepEqual(await callToolOverHttp(network, session(upstream.url), 'n-1', echo, options()), {
        content: [{ type: 'text', text: 'a' }],
        isError: false,
      });
    } finally {
      await upstream.close();
    }
  });

  test('calls share a connection: the stream is read to its end after the answer, not cut', async () => {
    const upstream = await startUpstream(({ body }, response) => {
      sse(response);
      response.write(event({ id: body.id, result }));
      // The stream ends a moment after the answer, as a server's may.
      setTimeout(() => response.end(), 5);
    });
    try {
      for (let i = 0; i < 10; i++) {
        assert.deepEqual(
          await callToolOverHttp(network, session(upstream.url), `k-${i}`, echo, options()),
          result,
        );
        await until('the stream to end', () => (upstream.finished() === i + 1 ? true : undefined));
      }
      assert.equal(upstream.connections(), 1);
    } finally {
      await upstream.close();
    }
  });

  test('a call cancelled before it is sent is not sent', async () => {
    const upstream = await startUpstream((_request, response) => response.writeHead(500).end());
    try {
      const client = new AbortController();
      const reason = new Error('the client went away');
      client.abort(reason);
      await assert.rejects(
        callToolOverHttp(network, session(upstream.url), 'p-1', echo, options({ signal: client.signal })),
        (error) => error === reason,
      );
      assert.equal(upstream.received.length, 0);
    } finally {
      await upstream.close();
    }
  });

  describe('time limits and cancellation', () => {
    let upstream: Awaited<ReturnType<typeof startUpstream>>;
    /** How the next tools/call is answered: progress every `everyMs`, `times` times, then the result. */
    let plan = { everyMs: 0, times: 0, answer: false };
    before(async () => {
      upstream = await startUpstream(({ body }, response) => {
        if (body.method !== 'tools/call') return void response.writeHead(202).end();
        sse(response);
        let sent = 0;
        response.on('close', () => clearInterval(tick));
        const tick = setInterval(() => {
          if (response.destroyed) return clearInterval(tick);
          if (sent < plan.times) {
            sent += 1;
            response.write(
              event({ method: 'notifications/progress', params: { progressToken: body.id, progress: sent } }),
            );
          } else {
            clearInterval(tick);
            if (plan.answer) response.end(event({ id: body.id, result }));
          }
        }, plan.everyMs || 1_000);
      });
    });
    after(() => upstream.close());

    const cancellations = () =>
      upstream.received
        .filter((request) => request.body?.method === 'notifications/cancelled')
        .map((request) => request.body.params);

    test('no answer and no progress within the limit: the SDK timeout, and the upstream is told', async () => {
      plan = { everyMs: 60_000, times: 0, answer: false };
      const failure = await failureOf<SdkError>(
        callToolOverHttp(network, session(upstream.url), 't-1', echo, options({ timeoutMs: 200 })),
      );
      assert.equal(failure.code, SdkErrorCode.RequestTimeout);
      await until('the cancellation upstream', () =>
        cancellations().find((params) => params.requestId === 't-1'),
      );
    });

    test('progress restarts the limit: a call longer than it runs to its end', async () => {
      // Five notifications 100 ms apart, then the result: 600 ms in all against a 300 ms limit.
      plan = { everyMs: 100, times: 5, answer: true };
      const started = Date.now();
      const answer = await callToolOverHttp(
        network,
        session(upstream.url),
        't-2',
        echo,
        options({ timeoutMs: 300 }),
      );
      assert.deepEqual(answer, result);
      assert.ok(Date.now() - started >= 500, 'it ran past the limit');
    });

    test('cancelled by its client: the reason is the failure, and the upstream is told', async () => {
      plan = { everyMs: 60_000, times: 0, answer: false };
      const client = new AbortController();
      const calling = callToolOverHttp(
        network,
        session(upstream.url),
        't-3',
        echo,
        options({ signal: client.signal }),
      );
      await until('the call upstream', () => upstream.received.find((request) => request.body?.id === 't-3'));
      const reason = new Error('the client cancelled');
      client.abort(reason);
      await assert.rejects(calling, (error) => error === reason);
      await until('the cancellation upstream', () =>
        cancellations().find((params) => params.requestId === 't-3'),
      );
    });
  });
});
