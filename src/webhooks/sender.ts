/**
 * One webhook attempt over HTTP(S): 10 s in all, redirects not followed, at most 64 KiB of the answer
 * read, and — unless the operator allows it — no connection to an internal address, checked on the
 * address actually connected to (after DNS), so a name cannot be re-pointed inside.
 */
import http from 'node:http';
import https from 'node:https';
import { guardedLookup, isInternalAddress } from '../services/network-targets.ts';

export const ATTEMPT_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;

export interface AttemptResult {
  statusCode: number | null;
  /** Set when there was no HTTP answer (refused, timed out, internal address). */
  error: string | null;
  retryAfterMs?: number;
}

function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

export function sendWebhook(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: { allowPrivate: boolean },
): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ statusCode: null, error: 'invalid URL' });
    }
    // A literal internal IP never goes through lookup, so it is checked here.
    const literal = target.hostname.replace(/^\[|\]$/g, '');
    if (!options.allowPrivate && /^[\d.]+$|:/.test(literal) && isInternalAddress(literal)) {
      return resolve({ statusCode: null, error: 'internal address refused' });
    }
    const client = target.protocol === 'https:' ? https : http;
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const request = client.request(
      target,
      {
        method: 'POST',
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
        lookup: guardedLookup(options.allowPrivate),
        agent: false,
      },
      (response) => {
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          // A receiver's answer is not ours to store: read a little, then stop.
          if (read > MAX_ANSWER_BYTES) response.destroy();
        });
        const done = () =>
          finish({
            statusCode: response.statusCode ?? null,
            error: null,
            retryAfterMs: parseRetryAfter(response.headers['retry-after'], Date.now()),
          });
        response.on('end', done);
        response.on('close', done);
        response.on('error', done);
      },
    );
    const timer = setTimeout(() => {
      request.destroy();
      finish({ statusCode: null, error: 'timed out after 10 s' });
    }, ATTEMPT_TIMEOUT_MS);
    request.on('error', (error: NodeJS.ErrnoException) =>
      finish({
        statusCode: null,
        error:
          error.message === 'internal address refused' ? error.message : (error.code ?? 'connection failed'),
      }),
    );
    request.end(body);
  });
}
