/** Unit tests of ApprovalsClient with a scripted fetch: requests sent, results, errors, retries, aborts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ApprovalsApiError,
  ApprovalsClient,
  type ApprovalsClientOptions,
  ApprovalsError,
  ApprovalsNetworkError,
  type Decision,
  type HoldRecord,
  type HoldStatus,
} from '../src/index.ts';

const BASE = 'https://approvals.example.com';
const KEY = 'svc_test_k3yk3yk3y';
const ID = 'svc_pa_Q2x8kLm3Np9rT5vW7yZ1aB';
const HOLDS_URL = `${BASE}/api/v1/holds`;
const HOLD_URL = `${HOLDS_URL}/${ID}`;
const WAIT_URL = `${HOLD_URL}/wait`;
/** The status URL the service sends; its host differs from BASE so a result that rebuilt it would show. */
const SENT_STATUS_URL = `https://status.example.com/a/${ID}`;

const submission = {
  tool_name: 'send_invoice',
  arguments: { amount: 120, currency: 'EUR' },
  agent_identity: { id: 'billing-bot', label: 'Billing bot' },
  context: { ticket: 'T-42' },
  idempotency_key: 'invoice-7781',
};

const approval: Decision = {
  verdict: 'approve',
  reason: null,
  channel: 'inbox',
  decided_at: '2026-03-01T10:05:00.000Z',
};
const denial: Decision = {
  verdict: 'reject',
  reason: 'Denied by rule: no invoices over 100',
  channel: 'rule',
  decided_at: '2026-03-01T10:00:00.000Z',
};

function holdRecord(status: HoldStatus, decision: Decision | null = null, id = ID): HoldRecord {
  return {
    id,
    status,
    created_at: '2026-03-01T10:00:00.000Z',
    expires_at: '2026-03-01T14:00:00.000Z',
    tool_name: 'send_invoice',
    connection: 'SDK',
    agent_identity: { id: 'billing-bot', label: 'Billing bot' },
    environment: 'test',
    approvals: { required: 1, received: decision ? 1 : 0 },
    decision,
  };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

const created = (status: 'allowed' | 'pending' | 'denied', headers: Record<string, string> = {}) =>
  json(201, { id: ID, status, status_url: SENT_STATUS_URL }, headers);

interface Call {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  at: number;
}

/** An answer: a response, an error to throw, or a function of the request's init. */
type Answer = Response | Error | ((init: RequestInit) => Response | Promise<Response>);

/** A fetch that records every call and answers from `script`: a list in order, or a function of the call index. */
function fakeFetch(script: Answer[] | ((index: number) => Answer)) {
  const calls: Call[] = [];
  const fetch: typeof globalThis.fetch = async (input, init = {}) => {
    calls.push({
      method: init.method ?? 'GET',
      url: String(input),
      headers: Object.fromEntries(new Headers(init.headers)),
      body: typeof init.body === 'string' ? JSON.parse(init.body) : init.body,
      at: performance.now(),
    });
    const index = calls.length - 1;
    const answer = typeof script === 'function' ? script(index) : script[index];
    if (answer === undefined) throw new Error(`unexpected request #${index + 1}`);
    if (answer instanceof Error) throw answer;
    return typeof answer === 'function' ? answer(init) : answer;
  };
  return { fetch, calls };
}

/** Never answers; rejects with the signal's reason once the SDK aborts the attempt. */
function hang(init: RequestInit): Promise<Response> {
  return new Promise((_resolve, reject) => {
    const signal = init.signal!;
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

function client(fetch: typeof globalThis.fetch, options: Partial<ApprovalsClientOptions> = {}) {
  return new ApprovalsClient({ apiKey: KEY, baseUrl: BASE, fetch, ...options });
}

const requests = (calls: Call[]) => calls.map((call) => `${call.method} ${call.url}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function apiError(fields: Partial<ApprovalsApiError>) {
  return (error: unknown) => {
    assert.ok(error instanceof ApprovalsApiError);
    assert.ok(error instanceof ApprovalsError);
    for (const [name, value] of Object.entries(fields)) {
      assert.deepEqual(error[name as keyof ApprovalsApiError], value, name);
    }
    return true;
  };
}

const typeErrorNaming = (word: string) => (error: unknown) =>
  error instanceof TypeError && error.message.includes(word);

test('hold() without an idempotency_key rejects with a TypeError and sends nothing', async () => {
  const { fetch, calls } = fakeFetch([]);
  const approvals = client(fetch);
  await assert.rejects(
    approvals.hold({ ...submission, idempotency_key: undefined } as any),
    typeErrorNaming('idempotency_key'),
  );
  await assert.rejects(
    approvals.hold({ ...submission, idempotency_key: '' }),
    typeErrorNaming('idempotency_key'),
  );
  await assert.rejects(approvals.hold(undefined as any), typeErrorNaming('idempotency_key'));
  assert.equal(calls.length, 0);
});

test('the constructor rejects a missing apiKey and a baseUrl that is not http(s)', () => {
  const { fetch } = fakeFetch([]);
  assert.throws(() => new ApprovalsClient({ baseUrl: BASE, fetch } as any), typeErrorNaming('apiKey'));
  assert.throws(() => new ApprovalsClient({ apiKey: '', baseUrl: BASE, fetch }), typeErrorNaming('apiKey'));
  for (const baseUrl of [undefined, '', 'approvals.example.com', 'ftp://approvals.example.com']) {
    assert.throws(
      () => new ApprovalsClient({ apiKey: KEY, baseUrl, fetch } as ApprovalsClientOptions),
      typeErrorNaming('baseUrl'),
    );
  }
});

test('allowed: one POST with the key, JSON and the submission without the SDK options', async () => {
  const receipt = 'header.payload.signature';
  const { fetch, calls } = fakeFetch([
    json(201, { id: ID, status: 'allowed', status_url: SENT_STATUS_URL, receipt }),
  ]);
  const result = await client(fetch).hold({
    ...submission,
    wait: true,
    timeoutMs: 5_000,
    signal: new AbortController().signal,
  });
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`]);
  assert.equal(calls[0]?.headers.authorization, `Bearer ${KEY}`);
  assert.equal(calls[0]?.headers['content-type'], 'application/json');
  assert.deepEqual(calls[0]?.body, submission);
  assert.deepEqual(result, {
    id: ID,
    status: 'auto_allowed',
    statusUrl: SENT_STATUS_URL,
    approved: true,
    rejected: false,
    decision: null,
    changed: false,
    arguments: submission.arguments,
    record: null,
    receipt,
    replayed: false,
  });
});

test('a trailing slash on baseUrl does not double the slash in request or status URLs', async () => {
  const { fetch, calls } = fakeFetch([created('allowed'), json(200, holdRecord('pending'))]);
  const approvals = client(fetch, { baseUrl: `${BASE}/` });
  await approvals.hold({ ...submission, wait: false });
  const result = await approvals.getHold(ID);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `GET ${HOLD_URL}`]);
  assert.equal(result.statusUrl, `${BASE}/a/${ID}`);
});

test('denied: POST, then one GET of the record for the reason', async () => {
  const record = holdRecord('rejected', denial);
  const { fetch, calls } = fakeFetch([created('denied'), json(200, record)]);
  const result = await client(fetch).hold(submission);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `GET ${HOLD_URL}`]);
  assert.equal(calls[1]?.headers.authorization, `Bearer ${KEY}`);
  assert.equal(calls[1]?.body, undefined);
  assert.deepEqual(result, {
    id: ID,
    status: 'rejected',
    statusUrl: SENT_STATUS_URL,
    approved: false,
    rejected: true,
    decision: denial,
    changed: false,
    arguments: submission.arguments,
    record,
    receipt: null,
    replayed: false,
  });
  assert.equal(result.decision?.reason, 'Denied by rule: no invoices over 100');
});

test('pending with the default wait: long-poll rounds until the record is decided', async () => {
  const decided = holdRecord('approved', approval);
  const { fetch, calls } = fakeFetch([
    created('pending'),
    json(200, holdRecord('pending')),
    json(200, decided),
  ]);
  const result = await client(fetch).hold(submission);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${WAIT_URL}`, `POST ${WAIT_URL}`]);
  for (const round of calls.slice(1)) {
    const body = round.body as { timeout_seconds: number };
    assert.deepEqual(Object.keys(body), ['timeout_seconds']);
    assert.ok(Number.isInteger(body.timeout_seconds), 'whole seconds');
    assert.ok(
      body.timeout_seconds >= 1 && body.timeout_seconds <= 60,
      `timeout_seconds ${body.timeout_seconds}`,
    );
    assert.equal(round.headers.authorization, `Bearer ${KEY}`);
  }
  assert.deepEqual(result, {
    id: ID,
    status: 'approved',
    statusUrl: SENT_STATUS_URL,
    approved: true,
    rejected: false,
    decision: approval,
    changed: false,
    arguments: submission.arguments,
    record: decided,
    receipt: null,
    replayed: false,
  });
});

test('pending with wait: false: exactly one request', async () => {
  const { fetch, calls } = fakeFetch([created('pending')]);
  const result = await client(fetch).hold({ ...submission, wait: false });
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`]);
  assert.deepEqual(calls[0]?.body, submission);
  assert.deepEqual(result, {
    id: ID,
    status: 'pending',
    statusUrl: SENT_STATUS_URL,
    approved: false,
    rejected: false,
    decision: null,
    changed: false,
    arguments: submission.arguments,
    record: null,
    receipt: null,
    replayed: false,
  });
});

test('a replayed pending hold with wait: false is read once more, since it may be decided by now', async () => {
  const decided = holdRecord('approved', approval);
  const replay = json(
    200,
    { id: ID, status: 'pending', status_url: SENT_STATUS_URL },
    { 'Idempotent-Replayed': 'true' },
  );
  const { fetch, calls } = fakeFetch([replay, json(200, decided)]);
  const result = await client(fetch).hold({ ...submission, wait: false });
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `GET ${HOLD_URL}`]);
  assert.equal(result.replayed, true);
  assert.equal(result.status, 'approved');
  assert.equal(result.approved, true);
  assert.deepEqual(result.record, decided);
});

test('waitForDecision: still pending when the time is up, the service asked once at least', async () => {
  const pending = holdRecord('pending');
  const { fetch, calls } = fakeFetch([json(200, pending)]);
  const result = await client(fetch).waitForDecision(ID, { timeoutMs: 0 });
  assert.deepEqual(requests(calls), [`POST ${WAIT_URL}`]);
  assert.deepEqual(calls[0]?.body, { timeout_seconds: 1 });
  assert.deepEqual(result, {
    id: ID,
    status: 'pending',
    statusUrl: `${BASE}/a/${ID}`,
    approved: false,
    rejected: false,
    decision: null,
    changed: false,
    arguments: null,
    record: pending,
    receipt: null,
    replayed: false,
  });
});

test('waitForDecision: a 2.5 s timeout asks for a 3 s round first, and no more than that after', async () => {
  const { fetch, calls } = fakeFetch([
    json(200, holdRecord('pending')),
    json(200, holdRecord('approved', approval)),
  ]);
  const result = await client(fetch).waitForDecision(ID, { timeoutMs: 2_500 });
  assert.deepEqual(requests(calls), [`POST ${WAIT_URL}`, `POST ${WAIT_URL}`]);
  assert.deepEqual(calls[0]?.body, { timeout_seconds: 3 });
  const second = (calls[1]?.body as { timeout_seconds: number }).timeout_seconds;
  assert.ok(second >= 1 && second <= 3, `second round ${second}`);
  assert.equal(result.approved, true);
});

test('an id with reserved characters is URL-encoded in paths and the status URL', async () => {
  const id = 'svc_pa_a/b?c#d';
  const encoded = 'svc_pa_a%2Fb%3Fc%23d';
  const { fetch, calls } = fakeFetch([
    json(200, holdRecord('pending', null, id)),
    json(200, holdRecord('pending', null, id)),
  ]);
  const approvals = client(fetch);
  const waited = await approvals.waitForDecision(id, { timeoutMs: 0 });
  const read = await approvals.getHold(id);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}/${encoded}/wait`, `GET ${HOLDS_URL}/${encoded}`]);
  assert.equal(waited.statusUrl, `${BASE}/a/${encoded}`);
  assert.equal(read.statusUrl, `${BASE}/a/${encoded}`);
});

test('getHold: one GET, the record, and the status URL built from baseUrl', async () => {
  const record = { ...holdRecord('approved', approval), receipt: 'header.payload.signature' };
  const { fetch, calls } = fakeFetch([json(200, record)]);
  const result = await client(fetch).getHold(ID);
  assert.deepEqual(requests(calls), [`GET ${HOLD_URL}`]);
  assert.equal(calls[0]?.headers.authorization, `Bearer ${KEY}`);
  assert.equal(calls[0]?.body, undefined);
  assert.deepEqual(result, {
    id: ID,
    status: 'approved',
    statusUrl: `${BASE}/a/${ID}`,
    approved: true,
    rejected: false,
    decision: approval,
    changed: false,
    arguments: null,
    record,
    receipt: record.receipt,
    replayed: false,
  });
});

test('an expired hold is neither approved nor rejected, and ends the wait', async () => {
  const { fetch, calls } = fakeFetch([json(200, holdRecord('expired'))]);
  const result = await client(fetch).waitForDecision(ID);
  assert.deepEqual(requests(calls), [`POST ${WAIT_URL}`]);
  assert.equal(result.status, 'expired');
  assert.equal(result.approved, false);
  assert.equal(result.rejected, false);
  assert.equal(result.decision, null);
});

test('422 validation_failed: an ApprovalsApiError with detail and issues, not retried', async () => {
  const body = {
    error: 'validation_failed',
    detail: 'agent_identity.id: Required',
    issues: [
      { field: 'agent_identity.id', message: 'Required' },
      { field: 'tool_name', message: 'Too long' },
    ],
    docs: `${BASE}/docs/holds`,
  };
  const { fetch, calls } = fakeFetch([json(422, body)]);
  await assert.rejects(
    client(fetch).hold(submission),
    apiError({
      status: 422,
      code: 'validation_failed',
      detail: body.detail,
      issues: body.issues,
      referenceId: null,
    }),
  );
  assert.equal(calls.length, 1);
});

test('401 and 404 are not retried', async () => {
  const unauthorized = fakeFetch([json(401, { error: 'unauthorized' }, { 'WWW-Authenticate': 'Bearer' })]);
  await assert.rejects(
    client(unauthorized.fetch).hold(submission),
    apiError({ status: 401, code: 'unauthorized' }),
  );
  assert.equal(unauthorized.calls.length, 1);

  const notFound = fakeFetch([json(404, { error: 'not_found' })]);
  await assert.rejects(client(notFound.fetch).getHold(ID), apiError({ status: 404, code: 'not_found' }));
  assert.equal(notFound.calls.length, 1);
});

test('500 on every attempt: retried maxRetries times, then an ApprovalsApiError with the referenceId', async () => {
  const { fetch, calls } = fakeFetch(() => json(500, { error: 'internal', referenceId: 'x' }));
  await assert.rejects(
    client(fetch, { maxRetries: 1 }).hold(submission),
    apiError({ status: 500, code: 'internal', referenceId: 'x' }),
  );
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${HOLDS_URL}`]);
});

test('503 then 201: the retried POST carries the same body, so the same idempotency_key', async () => {
  const { fetch, calls } = fakeFetch([json(503, { error: 'unavailable' }), created('allowed')]);
  const result = await client(fetch, { maxRetries: 1 }).hold(submission);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${HOLDS_URL}`]);
  assert.deepEqual(calls[0]?.body, submission);
  assert.deepEqual(calls[1]?.body, submission);
  assert.equal(result.status, 'auto_allowed');
});

const rateLimited = (retryAfter: string) =>
  json(
    429,
    { error: 'rate_limited' },
    {
      'Retry-After': retryAfter,
      'RateLimit-Limit': '120',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '1',
    },
  );

test('429 with Retry-After: 1 is retried after waiting about a second', async () => {
  const { fetch, calls } = fakeFetch([rateLimited('1'), created('allowed')]);
  const result = await client(fetch).hold(submission);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${HOLDS_URL}`]);
  const waited = calls[1]!.at - calls[0]!.at;
  assert.ok(waited >= 900, `waited ${waited} ms`);
  assert.equal(result.status, 'auto_allowed');
});

test('429 with maxRetries: 0 throws rate_limited with the rate-limit headers', async () => {
  const { fetch, calls } = fakeFetch([rateLimited('1')]);
  await assert.rejects(
    client(fetch, { maxRetries: 0 }).hold(submission),
    apiError({
      status: 429,
      code: 'rate_limited',
      rateLimit: { limit: 120, remaining: 0, resetSeconds: 1, retryAfterSeconds: 1 },
    }),
  );
  assert.equal(calls.length, 1);

  // Distinct figures, so that no header is read in place of another.
  const distinct = json(
    429,
    { error: 'rate_limited' },
    { 'Retry-After': '7', 'RateLimit-Limit': '120', 'RateLimit-Remaining': '3', 'RateLimit-Reset': '42' },
  );
  await assert.rejects(
    client(fakeFetch([distinct]).fetch, { maxRetries: 0 }).hold(submission),
    apiError({ rateLimit: { limit: 120, remaining: 3, resetSeconds: 42, retryAfterSeconds: 7 } }),
  );
});

test('429 with a Retry-After of an hour is thrown at once, not waited for', { timeout: 3_000 }, async (t) => {
  // Should the SDK wait after all, the abort ends its sleep so that the test process can exit.
  const controller = new AbortController();
  t.after(() => controller.abort());
  const { fetch, calls } = fakeFetch([rateLimited('3600')]);
  const started = performance.now();
  await assert.rejects(
    client(fetch).hold({ ...submission, signal: controller.signal }),
    apiError({ status: 429, code: 'rate_limited' }),
  );
  assert.ok(performance.now() - started < 500);
  assert.equal(calls.length, 1);
});

test('a network error is retried', async () => {
  const { fetch, calls } = fakeFetch([new TypeError('fetch failed'), created('allowed')]);
  const result = await client(fetch, { maxRetries: 1 }).hold(submission);
  assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${HOLDS_URL}`]);
  assert.deepEqual(calls[1]?.body, submission);
  assert.equal(result.approved, true);
});

test('network errors on every attempt: ApprovalsNetworkError with the cause after maxRetries + 1 calls', async () => {
  const failure = new TypeError('fetch failed');
  const { fetch, calls } = fakeFetch(() => failure);
  await assert.rejects(client(fetch, { maxRetries: 2 }).getHold(ID), (error: unknown) => {
    assert.ok(error instanceof ApprovalsNetworkError);
    assert.ok(error instanceof ApprovalsError);
    assert.equal(error.cause, failure);
    return true;
  });
  assert.deepEqual(requests(calls), [`GET ${HOLD_URL}`, `GET ${HOLD_URL}`, `GET ${HOLD_URL}`]);
});

test('an attempt without an answer times out as a network error', { timeout: 2_000 }, async () => {
  const { fetch, calls } = fakeFetch([hang]);
  const started = performance.now();
  await assert.rejects(
    client(fetch, { requestTimeoutMs: 50, maxRetries: 0 }).getHold(ID),
    ApprovalsNetworkError,
  );
  assert.ok(performance.now() - started < 500);
  assert.equal(calls.length, 1);
});

test(
  'an abort during a long-poll round rejects with the abort reason and stops',
  { timeout: 2_000 },
  async () => {
    const controller = new AbortController();
    const { fetch, calls } = fakeFetch([
      created('pending'),
      (init) => {
        queueMicrotask(() => controller.abort()); // while this round is in flight
        return hang(init);
      },
    ]);
    const started = performance.now();
    // No retries: the abort must not be taken for a network error.
    await assert.rejects(
      client(fetch, { maxRetries: 0 }).hold({ ...submission, signal: controller.signal }),
      (error: unknown) => {
        assert.equal(error, controller.signal.reason);
        assert.equal((error as Error).name, 'AbortError');
        return true;
      },
    );
    assert.ok(performance.now() - started < 500);
    // Kept on purpose, a bound and not an event: nothing tells when a library has done nothing. Every
    // wait of the SDK takes the signal and ends at once when it is aborted, so a request it still
    // made would come within a few turns of the event loop; 50 ms is many of them.
    await sleep(50);
    assert.deepEqual(requests(calls), [`POST ${HOLDS_URL}`, `POST ${WAIT_URL}`]);
  },
);

test('an already aborted signal rejects without any request', async () => {
  const controller = new AbortController();
  controller.abort();
  const { fetch, calls } = fakeFetch([]);
  const approvals = client(fetch);
  const isReason = (error: unknown) => error === controller.signal.reason;
  await assert.rejects(approvals.hold({ ...submission, signal: controller.signal }), isReason);
  await assert.rejects(approvals.getHold(ID, { signal: controller.signal }), isReason);
  await assert.rejects(approvals.waitForDecision(ID, { signal: controller.signal }), isReason);
  assert.equal(calls.length, 0);
});

test('an abort during the backoff before a retry rejects at once', { timeout: 2_000 }, async () => {
  const controller = new AbortController();
  const { fetch, calls } = fakeFetch([
    () => {
      setTimeout(() => controller.abort(), 50);
      return json(503, { error: 'unavailable' });
    },
  ]);
  const started = performance.now();
  await assert.rejects(
    client(fetch, { maxRetries: 2 }).getHold(ID, { signal: controller.signal }),
    (error: unknown) => error === controller.signal.reason,
  );
  // The first backoff is at least 250 ms: rejecting sooner shows the sleep itself was cut short.
  assert.ok(performance.now() - started < 200);
  assert.equal(calls.length, 1);
});

test(
  'an abort while an error answer is read rejects at once, even when the body ignores the signal',
  { timeout: 2_000 },
  async () => {
    const controller = new AbortController();
    // The body arrives 20 ms late and the abort comes before its end: the backoff starts already aborted.
    const slowBody = new ReadableStream<Uint8Array>({
      start(stream) {
        setTimeout(() => {
          controller.abort();
          stream.enqueue(new TextEncoder().encode('{"error":"unavailable"}'));
          stream.close();
        }, 20);
      },
    });
    const { fetch, calls } = fakeFetch([new Response(slowBody, { status: 503 })]);
    const started = performance.now();
    await assert.rejects(
      client(fetch, { maxRetries: 2 }).getHold(ID, { signal: controller.signal }),
      (error: unknown) => error === controller.signal.reason,
    );
    assert.ok(performance.now() - started < 200);
    assert.equal(calls.length, 1);
  },
);

test('a 2xx answer that is not JSON rejects with an ApprovalsError', async () => {
  const html = new Response('<html>app</html>', { status: 200, headers: { 'content-type': 'text/html' } });
  const { fetch } = fakeFetch([html]);
  await assert.rejects(client(fetch, { maxRetries: 0 }).getHold(ID), ApprovalsError);
});
