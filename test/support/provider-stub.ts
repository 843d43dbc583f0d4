/**
 * Stand-ins for the providers the notification channels talk to, as real HTTP servers on loopback:
 * the Slack Web API (chat.postMessage, chat.update) and a Twilio-compatible SMS API
 * (POST /2010-04-01/Accounts/<sid>/Messages.json). Each records every request as it arrived and
 * answers the way the provider does (including its way of refusing bad credentials); a test can make
 * it fail for a while. Pass `env` to `startTestService(backend, { env })`.
 */
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request to a stub, as it arrived. */
export interface ProviderCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  /** The status the stub answered with. */
  status: number;
  at: number;
}

async function readBody(request: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function listen(server: http.Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** Waits until `calls()` returns at least `count` calls. */
async function waitForCalls<T>(
  what: string,
  calls: () => T[],
  count: number,
  timeoutMs: number,
): Promise<T[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = calls();
    if (found.length >= count) return found;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${count} ${what}, got ${found.length}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------
// Slack

export interface SlackCall extends ProviderCall {
  /** `chat.postMessage`, `chat.update`, ... */
  api: string;
  /** The JSON body. */
  body: any;
  /** Whether the answer was `ok: true`. */
  ok: boolean;
}

export interface SlackStub {
  origin: string;
  token: string;
  /** SLACK_API_URL and SLACK_BOT_TOKEN for the service. */
  env: { SLACK_API_URL: string; SLACK_BOT_TOKEN: string };
  calls: SlackCall[];
  /** The current text and blocks of every message posted, by `${channel}/${ts}`. */
  messages: Map<string, { text: string; blocks: any[] }>;
  /** Answers every call with this HTTP status and an HTML error page until `recover()`. */
  fail(status?: number): void;
  recover(): void;
  /**
   * The next `times` calls of `api` are carried out at once but answered only after `ms` (a slow
   * Slack): the service's next call waits for the answer.
   */
  slowDown(api: string, ms: number, times?: number): void;
  /** Successful calls of one API method (optionally matching `filter`), waiting for `count` of them. */
  waitFor(
    api: string,
    count: number,
    filter?: (call: SlackCall) => boolean,
    timeoutMs?: number,
  ): Promise<SlackCall[]>;
  close(): Promise<void>;
}

export async function startSlackStub(token = `xoxb-${randomBytes(8).toString('hex')}`): Promise<SlackStub> {
  const calls: SlackCall[] = [];
  const messages = new Map<string, { text: string; blocks: any[] }>();
  let failing: number | null = null;
  let sequence = 0;
  const slow: { api: string; ms: number }[] = [];

  const server = http.createServer(async (request, response) => {
    const raw = await readBody(request);
    const path = request.url ?? '';
    const api = path.replace(/^\/api\//, '');
    let body: any = null;
    try {
      body = JSON.parse(raw);
    } catch {
      // recorded as null; answered like Slack does
    }
    const record = (status: number, ok: boolean) =>
      calls.push({
        method: request.method ?? '',
        path,
        headers: request.headers,
        raw,
        status,
        at: Date.now(),
        api,
        body,
        ok,
      });

    if (failing !== null) {
      record(failing, false);
      response.writeHead(failing, { 'content-type': 'text/html' });
      response.end('<html><body>Internal Server Error</body></html>');
      return;
    }
    let status = 200;
    let answer: Record<string, unknown>;
    if (request.method !== 'POST' || !path.startsWith('/api/')) {
      status = 404;
      answer = { ok: false, error: 'unknown_method' };
    } else if (request.headers.authorization !== `Bearer ${token}`) {
      // Slack answers 200 with ok:false for bad credentials.
      answer = { ok: false, error: 'invalid_auth' };
    } else if (!body || typeof body.channel !== 'string') {
      answer = { ok: false, error: 'channel_not_found' };
    } else if (api === 'chat.postMessage') {
      sequence += 1;
      // Posting to a user id opens a direct message: Slack answers with the DM channel's id.
      const channel = /^[UW]/.test(body.channel) ? `D${body.channel.slice(1)}` : body.channel;
      const ts = `${1_700_000_000 + sequence}.${String(sequence).padStart(6, '0')}`;
      messages.set(`${channel}/${ts}`, { text: body.text, blocks: body.blocks });
      answer = { ok: true, channel, ts, message: { text: body.text, ts } };
    } else if (api === 'chat.update') {
      const key = `${body.channel}/${body.ts}`;
      if (messages.has(key)) {
        messages.set(key, { text: body.text, blocks: body.blocks });
        answer = { ok: true, channel: body.channel, ts: body.ts, text: body.text };
      } else {
        answer = { ok: false, error: 'message_not_found' };
      }
    } else {
      answer = { ok: false, error: 'unknown_method' };
    }
    record(status, answer.ok === true);
    const delay = slow.findIndex((entry) => entry.api === api);
    if (delay >= 0) await sleep(slow.splice(delay, 1)[0]!.ms);
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    response.end(JSON.stringify(answer));
  });
  const origin = await listen(server);

  return {
    origin,
    token,
    env: { SLACK_API_URL: `${origin}/api`, SLACK_BOT_TOKEN: token },
    calls,
    messages,
    fail(status = 500) {
      failing = status;
    },
    recover() {
      failing = null;
    },
    slowDown(api, ms, times = 1) {
      for (let i = 0; i < times; i++) slow.push({ api, ms });
    },
    waitFor(api, count, filter = () => true, timeoutMs = 5000) {
      return waitForCalls(
        `successful ${api} calls`,
        () => calls.filter((call) => call.api === api && call.ok && filter(call)),
        count,
        timeoutMs,
      );
    },
    close: () => closeServer(server),
  };
}

// ---------------------------------------------------------------------------------------------
// SMS (Twilio-compatible)

export interface SmsCall extends ProviderCall {
  /** The form fields (To, From, Body). */
  form: Record<string, string>;
  /** The message SID the stub answered with (when it accepted the message). */
  sid: string | null;
}

export interface SmsStub {
  origin: string;
  accountSid: string;
  authToken: string;
  from: string;
  /** SMS_API_URL, SMS_ACCOUNT_SID, SMS_AUTH_TOKEN and SMS_FROM for the service. */
  env: { SMS_API_URL: string; SMS_ACCOUNT_SID: string; SMS_AUTH_TOKEN: string; SMS_FROM: string };
  calls: SmsCall[];
  /** Answers every call with this HTTP status until `recover()` (the provider is down). */
  fail(status?: number): void;
  recover(): void;
  /** Accepted messages to one number, waiting for `count` of them. */
  waitFor(to: string, count?: number, timeoutMs?: number): Promise<SmsCall[]>;
  close(): Promise<void>;
}

export async function startSmsStub(): Promise<SmsStub> {
  const accountSid = `AC${randomBytes(16).toString('hex')}`;
  const authToken = randomBytes(16).toString('hex');
  const from = '+15005550006';
  const calls: SmsCall[] = [];
  let failing: number | null = null;
  const basic = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;

  const server = http.createServer(async (request, response) => {
    const raw = await readBody(request);
    const path = request.url ?? '';
    const form = Object.fromEntries(new URLSearchParams(raw));
    let status: number;
    let answer: Record<string, unknown>;
    let sid: string | null = null;
    if (failing !== null) {
      status = failing;
      answer = { code: 20500, message: 'Internal Server Error', status };
    } else if (request.method !== 'POST' || path !== `/2010-04-01/Accounts/${accountSid}/Messages.json`) {
      status = 404;
      answer = { code: 20404, message: 'The requested resource was not found', status };
    } else if (request.headers.authorization !== basic) {
      status = 401;
      answer = { code: 20003, message: 'Authenticate', status };
    } else if (!form.To || !form.From || !form.Body) {
      status = 400;
      answer = { code: 21604, message: 'A To, From and Body are required', status };
    } else {
      status = 201;
      sid = `SM${randomBytes(16).toString('hex')}`;
      answer = {
        sid,
        account_sid: accountSid,
        to: form.To,
        from: form.From,
        body: form.Body,
        status: 'queued',
      };
    }
    calls.push({
      method: request.method ?? '',
      path,
      headers: request.headers,
      raw,
      status,
      at: Date.now(),
      form,
      sid,
    });
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    response.end(JSON.stringify(answer));
  });
  const origin = await listen(server);

  return {
    origin,
    accountSid,
    authToken,
    from,
    env: { SMS_API_URL: origin, SMS_ACCOUNT_SID: accountSid, SMS_AUTH_TOKEN: authToken, SMS_FROM: from },
    calls,
    fail(status = 503) {
      failing = status;
    },
    recover() {
      failing = null;
    },
    waitFor(to, count = 1, timeoutMs = 5000) {
      return waitForCalls(
        `SMS to ${to}`,
        () => calls.filter((call) => call.sid !== null && call.form.To === to),
        count,
        timeoutMs,
      );
    },
    close: () => closeServer(server),
  };
}
