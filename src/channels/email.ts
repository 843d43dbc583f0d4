/** Sending e-mail over SMTP (SMTP_URL, MAIL_FROM) with nodemailer; each message a client span when traced. */
import nodemailer from 'nodemailer';
import { inSpan, SpanKind } from '../telemetry/tracing.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

export interface Mailer {
  send(message: MailMessage): Promise<void>;
  close(): void;
}

export function smtpMailer(url: string, from: string): Mailer {
  const transport = nodemailer.createTransport(url);
  // The server's name and port only: never the URL's credentials, never a recipient.
  const { hostname, port, protocol } = new URL(url);
  // Without a port, nodemailer connects to 465 for smtps: and to 587 otherwise.
  const server = {
    'server.address': hostname,
    'server.port': Number(port) || (protocol === 'smtps:' ? 465 : 587),
  };
  return {
    async send(message) {
      await inSpan('smtp send', server, () => transport.sendMail({ from, ...message }), SpanKind.CLIENT);
    },
    close: () => transport.close(),
  };
}
