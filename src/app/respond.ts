/** What every page of the app shares: reading a form and a cookie, answering with a page or a problem. */
import type { OAuthServer } from '../oauth/server.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateCounter } from '../web/rate-limiter.ts';
import type { ServiceContext } from '../services/context.ts';
import type { McpConnectionTest } from '../services/mcp-servers.ts';
import type { AppSession } from '../services/sign-in.ts';
import type { McpServer } from '../store/mcp-servers.ts';
import { type Html, html } from './html.ts';
import { APP_CSP, layout } from './layout.ts';

export const SESSION_COOKIE = 'approvals_session';

export type Form = Record<string, string | string[]>;

/** The cookie's value; undefined when absent or not decodable (a forged cookie is no cookie). */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key !== name) continue;
    try {
      return decodeURIComponent(value.join('='));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export function sessionCookie(ctx: ServiceContext, value: string, maxAgeSeconds: number): string {
  const secure = ctx.secureCookies ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

/** `csp`: the app's policy unless a page needs another (the consent page's form goes to the client). */
export function sendPage(reply: FastifyReply, page: Html, status = 200, csp = APP_CSP) {
  return reply
    .code(status)
    .headers({
      'Content-Security-Policy': csp,
      'X-Content-Type-Options': 'nosniff',
      // same-origin: our own form posts carry a real Origin header (no-referrer would make it `null`).
      'Referrer-Policy': 'same-origin',
      'X-Frame-Options': 'DENY',
      'Cache-Control': 'no-store',
    })
    .type('text/html; charset=utf-8')
    .send(page.value);
}

export function problemPage(
  reply: FastifyReply,
  status: number,
  title: string,
  message: string,
  session?: AppSession | null,
) {
  return sendPage(
    reply,
    layout(
      { title, session },
      html`<div class="narrow card">
        <h1>${title}</h1>
        <p>${message}</p>
      </div>`,
    ),
    status,
  );
}

// A body may also arrive as JSON, with values of any type: only strings count as given.
export const field = (form: Form | undefined, name: string): string => {
  const value: unknown = form?.[name];
  const last: unknown = Array.isArray(value) ? value.at(-1) : value;
  return typeof last === 'string' ? last.trim() : '';
};

export const fields = (form: Form | undefined, name: string): string[] =>
  [form?.[name] as unknown].flat().filter((value): value is string => typeof value === 'string');

export type PageDeps = {
  ctx: ServiceContext;
  counter: RateCounter;
  /** The anonymous per-IP quota (sign-in forms and decision links). */
  limitAnonymous: (request: FastifyRequest, reply: FastifyReply) => Promise<boolean>;
  /** Tests the connection to a registered MCP server (the proxy's, given by the HTTP server). */
  testMcpConnection: (ctx: ServiceContext, server: McpServer) => Promise<McpConnectionTest>;
  /** The OAuth authorization server, for its consent page. */
  oauth: OAuthServer;
};
