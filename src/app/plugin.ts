/**
 * The human side: the app under /app and the decision pages /d/<token>. Server-rendered HTML;
 * cookie sessions (never API keys), a CSRF token on every form, roles checked on every route.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceContext } from '../services/context.ts';
import { ChainFrozenError } from '../services/errors.ts';
import { equalInConstantTime } from '../services/hashing.ts';
import { type AppSession, sessionFor } from '../services/sign-in.ts';
import type { Role } from '../store/members.ts';
import { limitAnonymous, limitMember } from '../web/guard.ts';
import type { RateCounter } from '../web/rate-limiter.ts';
import { field, type Form, type PageDeps, problemPage, readCookie, SESSION_COOKIE } from './respond.ts';
import { adminPages } from './pages/admin.ts';
import { authPages } from './pages/auth.ts';
import { decisionLinkPages } from './pages/decision-link.ts';
import { evidencePages } from './pages/evidence.ts';
import { historyPages } from './pages/history.ts';
import { inboxPages } from './pages/inbox.ts';
import { oauthConsentPages } from './pages/oauth-consent.ts';
import { passkeyPages } from './pages/passkeys.ts';
import { reportPages } from './pages/reports.ts';
import { settingsPages } from './pages/settings.ts';
import { widgetPages } from './pages/widget.ts';

declare module 'fastify' {
  interface FastifyRequest {
    appSession?: AppSession | null;
  }
  interface FastifyContextConfig {
    /** No session needed (sign-in, first run, decision links, static files). */
    public?: boolean;
    /** The role a route needs; any signed-in member when absent. */
    role?: Role;
  }
}

export interface AppContext {
  ctx: ServiceContext;
  counter: RateCounter;
  testMcpConnection: PageDeps['testMcpConnection'];
  oauth: PageDeps['oauth'];
}

/** The last value of each field, or every value for fields that repeat (multi-selects). */
function readUrlEncoded(body: string): Form {
  const form: Form = {};
  for (const [key, value] of new URLSearchParams(body)) {
    const existing = form[key];
    form[key] = existing === undefined ? value : [...[existing].flat(), value];
  }
  return form;
}

const staticFiles = new Map(
  ['app.css', 'app.js', 'copy.js', 'time.js', 'passkey.js'].map((name) => [
    name,
    readFileSync(new URL(`./static/${name}`, import.meta.url), 'utf8'),
  ]),
);

/** Who is signed in, and may they be here? Runs before the body is read. */
function checkAccess({ ctx, counter }: Pick<AppContext, 'ctx' | 'counter'>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    request.appSession = await sessionFor(ctx, readCookie(request, SESSION_COOKIE));
    const config = request.routeOptions.config;
    if (config.public) return;
    if (!request.appSession) {
      // Back here after signing in (auth.ts keeps only paths of the app).
      if (request.method === 'GET')
        return reply.redirect(`/app/login?next=${encodeURIComponent(request.url)}`, 303);
      return problemPage(reply, 401, 'Signed out', 'Your session has ended. Sign in again.');
    }
    // The member's own quota (APP_RATE_LIMIT), apart from the workspace's API buckets; Retry-After is set.
    if (!(await limitMember(counter, ctx, reply, request.appSession.member, 'app'))) {
      // The live-events stream is opened by a script, not read by a person: no page.
      if (request.routeOptions.url === '/app/events')
        return reply.code(429).type('text/plain; charset=utf-8').send('Too many requests');
      return problemPage(
        reply,
        429,
        'Too many requests',
        'You have made more requests in the last minute than the app allows. Wait a moment and try again.',
        request.appSession,
      );
    }
    if (config.role === 'admin' && request.appSession.member.role !== 'admin') {
      return problemPage(reply, 403, 'Not allowed', 'This page is for workspace admins.', request.appSession);
    }
  };
}

/** Every form post carries the session's CSRF token, and comes from our own origin. */
function checkFormOrigin(ctx: ServiceContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== 'POST') return;
    const origin = request.headers.origin;
    const ours = [new URL(ctx.publicUrl).origin, `${request.protocol}://${request.host}`];
    if ((origin && !ours.includes(origin)) || request.headers['sec-fetch-site'] === 'cross-site') {
      return problemPage(reply, 403, 'Refused', 'This form was sent from another site.');
    }
    const session = request.appSession;
    if (!session || request.routeOptions.config.public) return;
    const token = field(request.body as Form, '_csrf');
    if (!token || !equalInConstantTime(token, session.csrfToken)) {
      return problemPage(
        reply,
        403,
        'Refused',
        'This form has expired. Go back, reload the page and try again.',
        session,
      );
    }
  };
}

/**
 * A frozen evidence chain refuses every write of its workspace: said as a page, not as the API's JSON.
 * Anything else goes on to the server's handler.
 */
function frozenChainPage(error: unknown, request: FastifyRequest, reply: FastifyReply) {
  if (!(error instanceof ChainFrozenError)) throw error;
  return problemPage(
    reply,
    503,
    'Not recorded',
    "Nothing was changed: this workspace's evidence record failed its integrity check and no change can be recorded until an operator has looked into it. Tell your administrator.",
    request.appSession,
  );
}

function staticRoutes(app: FastifyInstance) {
  app.get('/favicon.ico', { config: { public: true } }, async (_request, reply) => reply.code(204).send());

  app.get<{ Params: { name: string } }>(
    '/app/static/:name',
    { config: { public: true } },
    async (request, reply) => {
      const file = staticFiles.get(request.params.name);
      if (!file) return reply.code(404).send('');
      return reply
        .type(
          request.params.name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
        )
        .header('Cache-Control', 'public, max-age=300')
        .send(file);
    },
  );
}

export async function appPlugin(
  app: FastifyInstance,
  { ctx, counter, testMcpConnection, oauth }: AppContext,
) {
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: 256 * 1024 },
    (_r, body, done) => done(null, readUrlEncoded(body as string)),
  );
  app.addHook('onRequest', checkAccess({ ctx, counter }));
  app.setErrorHandler(frozenChainPage);
  app.addHook('preHandler', checkFormOrigin(ctx));
  staticRoutes(app);

  const deps: PageDeps = {
    ctx,
    counter,
    testMcpConnection,
    oauth,
    limitAnonymous: (request: FastifyRequest, reply: FastifyReply) =>
      limitAnonymous(counter, ctx, request, reply),
  };
  authPages(app, deps);
  inboxPages(app, deps);
  historyPages(app, deps);
  evidencePages(app, deps);
  decisionLinkPages(app, deps);
  adminPages(app, deps);
  widgetPages(app, deps);
  reportPages(app, deps);
  settingsPages(app, deps);
  passkeyPages(app, deps);
  oauthConsentPages(app, deps);
}
