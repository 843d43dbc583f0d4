/**
 * Slack: the Web API (chat.postMessage, chat.update) with a bot token, and the check of Slack's
 * request signature on interactions (v0, HMAC-SHA256, five minutes' tolerance).
 * The API base URL is a setting (SLACK_API_URL), so tests run against a local server.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { answerJson, type HttpClient } from '../net/http-client.ts';

export interface SlackMessage {
  text: string;
  blocks: unknown[];
}

export interface SlackPosted {
  channel: string;
  ts: string;
}

export interface Slack {
  post(channel: string, message: SlackMessage): Promise<SlackPosted>;
  update(posted: SlackPosted, message: SlackMessage): Promise<void>;
}

const TIMEOUT_MS = 10_000;

export function slackClient(options: { apiUrl: string; botToken: string; http: HttpClient }): Slack {
  async function call(method: string, body: Record<string, unknown>) {
    const response = await options.http.send(`${options.apiUrl.replace(/\/$/, '')}/${method}`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${options.botToken}`,
        'Content-Type': 'application/json; charset=utf-8',
      },
      body: JSON.stringify(body),
      timeoutMs: TIMEOUT_MS,
    });
    const answer = answerJson(response) as {
      ok?: boolean;
      error?: string;
      channel?: string;
      ts?: string;
    };
    // Slack answers 200 with ok:false for most errors; 429 and 5xx are worth another attempt.
    if (!response.ok || !answer.ok)
      throw new Error(`Slack ${method}: ${answer.error ?? `HTTP ${response.status}`}`.slice(0, 200));
    return answer;
  }
  return {
    async post(channel, message) {
      const answer = await call('chat.postMessage', { channel, ...message, unfurl_links: false });
      return { channel: String(answer.channel ?? channel), ts: String(answer.ts) };
    },
    async update(posted, message) {
      await call('chat.update', { channel: posted.channel, ts: posted.ts, ...message });
    },
  };
}

export const SLACK_TOLERANCE_MS = 5 * 60_000;

/** Whether a request carries Slack's signature over `v0:<timestamp>:<raw body>` and is fresh. */
export function verifySlackSignature(
  signingSecret: string,
  headers: { timestamp: unknown; signature: unknown },
  rawBody: string,
  now: number,
): boolean {
  const { timestamp, signature } = headers;
  if (typeof timestamp !== 'string' || !/^\d{1,12}$/.test(timestamp)) return false;
  if (typeof signature !== 'string' || !/^v0=[0-9a-f]{64}$/.test(signature)) return false;
  if (Math.abs(now - Number(timestamp) * 1000) > SLACK_TOLERANCE_MS) return false;
  const expected = `v0=${createHmac('sha256', signingSecret).update(`v0:${timestamp}:${rawBody}`).digest('hex')}`;
  return timingSafeEqual(Buffer.from(expected), Buffer.from(signature));
}
