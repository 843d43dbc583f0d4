/**
 * SMS through a Twilio-compatible API (account SID, auth token, sender, API base URL as settings),
 * and the check of its request signature on inbound replies (X-Twilio-Signature: base64
 * HMAC-SHA1 of the full URL followed by every form parameter, sorted by name, as name + value).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { answerJson, type HttpClient } from '../net/http-client.ts';

export interface Sms {
  send(to: string, body: string): Promise<{ sid: string }>;
}

const TIMEOUT_MS = 10_000;

export function smsClient(options: {
  apiUrl: string;
  accountSid: string;
  authToken: string;
  from: string;
  http: HttpClient;
}): Sms {
  return {
    async send(to, body) {
      const url = `${options.apiUrl.replace(/\/$/, '')}/2010-04-01/Accounts/${encodeURIComponent(options.accountSid)}/Messages.json`;
      const response = await options.http.send(url, {
        method: 'POST',
        headers: {
          Authorization: `Basic ${Buffer.from(`${options.accountSid}:${options.authToken}`).toString('base64')}`,
          'Content-Type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ To: to, From: options.from, Body: body }).toString(),
        timeoutMs: TIMEOUT_MS,
      });
      const answer = answerJson(response) as { sid?: string; code?: number };
      if (!response.ok)
        throw new Error(
          `SMS provider: HTTP ${response.status}${answer.code ? ` (code ${answer.code})` : ''}`,
        );
      return { sid: String(answer.sid ?? '') };
    },
  };
}

export function twilioSignature(authToken: string, url: string, params: Record<string, string>): string {
  const data = Object.keys(params)
    .sort()
    .reduce((text, name) => text + name + params[name], url);
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

export function verifyTwilioSignature(
  authToken: string,
  url: string,
  params: Record<string, string>,
  signature: unknown,
): boolean {
  if (typeof signature !== 'string' || signature.length === 0 || signature.length > 100) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
