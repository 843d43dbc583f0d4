/** Small HTTP helpers for tests: JSON in, JSON (or text) out. */
import assert from 'node:assert/strict';

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function call(
  base: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.raw;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(base + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

let sequence = 0;

/** A valid submission; `overrides` replace top-level fields. */
export function submission(overrides: Record<string, unknown> = {}) {
  sequence += 1;
  return {
    tool_name: 'send_invoice',
    arguments: { amount: 120, currency: 'EUR' },
    agent_identity: { id: 'agent-7', label: 'Billing bot' },
    context: { ticket: 'T-1' },
    idempotency_key: `key-${process.pid}-${sequence}-${Math.random()}`,
    ...overrides,
  };
}

/** The JSON-RPC messages of an MCP streamable HTTP answer, sent as JSON or as server-sent events. */
export async function rpcMessages(response: Response): Promise<any[]> {
  const text = await response.text();
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    return text
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice(5)));
  }
  return text ? [JSON.parse(text)] : [];
}

/** What a promise rejected with (fails the test when it resolves). */
export async function failureOf<E = unknown>(promise: Promise<unknown>): Promise<E> {
  const outcome = await promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) assert.fail(`expected a failure, got ${JSON.stringify(outcome.value)}`);
  return outcome.error as E;
}

/** The JSON-RPC error a rejected MCP client promise carries (fails the test when it resolves). */
export const rpcFailure = (promise: Promise<unknown>) =>
  failureOf<{ code: number; message: string; data?: unknown }>(promise);
