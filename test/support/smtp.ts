/**
 * A real SMTP server on a free loopback port that keeps every message it is given, for tests of
 * e-mail the service sends (sign-in links, decision links). No auth, no TLS. Pass `env` to
 * `startTestService(backend, { env: smtp.env })`.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  /** Envelope sender and recipients (lowercase), as the SMTP client gave them. */
  from: string;
  to: string[];
  subject: string;
  /** Top-level headers, lowercase names; folded lines joined. */
  headers: Record<string, string>;
  /** Every text part, decoded (quoted-printable / base64), joined by blank lines. */
  body: string;
  /** Every http(s) URL in the decoded body, in order, without duplicates. */
  links: string[];
  raw: string;
}

export interface TestSmtp {
  port: number;
  url: string;
  /** Settings that point a service at this server. */
  env: { SMTP_URL: string };
  /** Every message received so far, oldest first. */
  messages: Mail[];
  /** Messages received so far for one recipient. */
  messagesTo(address: string): Mail[];
  /**
   * The oldest message to `address` not returned by `next` before, waiting for it if none has
   * arrived yet (fails after `timeoutMs`).
   */
  next(address: string, timeoutMs?: number): Promise<Mail>;
  close(): Promise<void>;
}

function splitHeaders(block: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] ??= line.slice(colon + 1).trim();
  }
  return headers;
}

function splitMessage(raw: string): { headers: Record<string, string>; body: string } {
  const match = /\r?\n\r?\n/.exec(raw);
  if (!match) return { headers: splitHeaders(raw), body: '' };
  return { headers: splitHeaders(raw.slice(0, match.index)), body: raw.slice(match.index + match[0].length) };
}

function decodeQuotedPrintable(text: string): string {
  const bytes: number[] = [];
  const soft = text.replace(/=\r?\n/g, '');
  for (let i = 0; i < soft.length; i++) {
    const hex = soft.slice(i + 1, i + 3);
    if (soft[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(soft[i]!, 'utf8'));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function decodeBody(headers: Record<string, string>, body: string): string {
  const encoding = (headers['content-transfer-encoding'] ?? '').toLowerCase();
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body);
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  return body;
}

/** The decoded text of every text/* part of a (possibly multipart) entity. */
function textParts(headers: Record<string, string>, body: string): string[] {
  const type = headers['content-type'] ?? 'text/plain';
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    const parts = body.split(`--${boundary}`).slice(1);
    return parts
      .filter((part) => !part.startsWith('--'))
      .flatMap((part) => {
        const inner = splitMessage(part.replace(/^\r?\n/, ''));
        return textParts(inner.headers, inner.body);
      });
  }
  return /^text\//i.test(type) ? [decodeBody(headers, body)] : [];
}

/** `=?UTF-8?Q?…?=` and `=?UTF-8?B?…?=` encoded words (RFC 2047), enough for subjects. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_all, _charset, kind: string, text: string) =>
      kind.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : decodeQuotedPrintable(text.replaceAll('_', ' ')),
    );
}

const unescapeHtml = (text: string) =>
  text.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&#39;', "'");

export function parseMail(raw: string, envelope: { from: string; to: string[] }): Mail {
  const { headers, body } = splitMessage(raw);
  const text = textParts(headers, body).join('\n\n');
  const links = [...new Set([...text.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => unescapeHtml(m[0])))];
  return {
    from: envelope.from,
    to: envelope.to,
    subject: decodeWords(headers.subject ?? ''),
    headers,
    body: text,
    links,
    raw,
  };
}

export async function startSmtp(): Promise<TestSmtp> {
  const messages: Mail[] = [];
  const taken = new Set<Mail>();
  const listeners = new Set<() => void>();

  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    size: 10 * 1024 * 1024,
    closeTimeout: 1000,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', callback);
      stream.on('end', () => {
        const envelope = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address.toLowerCase() : '',
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()),
        };
        // Stored before the 250 goes out: once the service's send resolves, the message is here.
        messages.push(parseMail(Buffer.concat(chunks).toString('utf8'), envelope));
        for (const listener of [...listeners]) listener();
        callback();
      });
    },
  });
  server.on('error', () => {
    // A client that hangs up mid-session is not the test's concern.
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  const url = `smtp://127.0.0.1:${port}`;

  const messagesTo = (address: string) => messages.filter((mail) => mail.to.includes(address.toLowerCase()));

  return {
    port,
    url,
    env: { SMTP_URL: url },
    messages,
    messagesTo,
    next(address, timeoutMs = 5000) {
      const take = () => {
        const mail = messagesTo(address).find((m) => !taken.has(m));
        if (mail) taken.add(mail);
        return mail;
      };
      const ready = take();
      if (ready) return Promise.resolve(ready);
      return new Promise<Mail>((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`no e-mail to ${address} within ${timeoutMs} ms`));
        }, timeoutMs);
        const listener = () => {
          const mail = take();
          if (!mail) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(mail);
        };
        listeners.add(listener);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
