/**
 * One webhook attempt: a POST through the guarded HTTP client, 10 s in all, redirects not followed
 * (a 3xx is the answer, and a failure), at most 64 KiB of the answer read. Connections are kept alive
 * between attempts (a TLS handshake per delivery is the receiver's cost too); each new one is checked
 * against internal addresses when it is made.
 */
import { httpClient, RequestFailed, type HttpClient } from '../net/http-client.ts';

export const ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

export interface AttemptResult {
  statusCode: number | null;
  /** Set when there was no HTTP answer (refused, timed out, internal address). */
  error: string | null;
  retryAfterMs?: number;
}

function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  if (typeof value !== 'string') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Sends webhook attempts; unless `allowPrivate`, never to an internal address. `close` ends its connections. */
export function webhookSender(options: { allowPrivate: boolean }) {
  const client = httpClient({ allowPrivate: options.allowPrivate });
  return {
    send: (url: string, headers: Record<string, string>, body: string) =>
      sendWebhook(client, url, headers, body),
    close: () => client.close(),
  };
}

async function sendWebhook(
  client: HttpClient,
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<AttemptResult> {
  try {
    const answer = await client.send(url, {
      method: 'POST',
      headers,
      body,
      timeoutMs: ATTEMPT_TIMEOUT_MS,
      maxAnswerBytes: MAX_ANSWER_BYTES,
      readText: false, // only the status matters
    });
    return {
      statusCode: answer.status,
      error: null,
      retryAfterMs: parseRetryAfter(answer.headers['retry-after'], Date.now()),
    };
  } catch (error) {
    if (error instanceof RequestFailed) return { statusCode: null, error: error.message };
    throw error;
  }
}
